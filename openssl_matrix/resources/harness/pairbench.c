/*
 * openssl-matrix-pairbench: two builds of libcrypto compared in one process, in
 * alternating timed windows of a few milliseconds (written for openssl-matrix).
 *
 * Why: on a VM whose core is shared with another guest, one-second `openssl speed`
 * samples of the same code spread by 20 % and more, and samples taken seconds apart are
 * barely correlated, so a ratio of two builds measured one after the other carries the
 * noise of both. Windows of 5 ms that alternate A B B A share the same stretch of the
 * neighbour's load, so the ratio of each such block is steady where single figures are
 * not (docs/noise.md).
 *
 * Each side is a libcrypto loaded with dlmopen() into a namespace of its own (two
 * builds with the same soname, or the same file twice, stay apart), with its own
 * OPENSSL_ia32cap in the environment while it loads and initialises (the library reads
 * the variable once, then). The work per operation is what `openssl speed -evp` does:
 * EVP_Digest() of one block for a digest, EVP_EncryptUpdate() (or Decrypt) of one
 * block in place for a cipher, the algorithm fetched once where the library has
 * EVP_*_fetch (3.0 on) and looked up by name before that. Needs 1.1.0 or newer.
 * The clock is read once per batch of operations, the batch sized for each side so that
 * it takes BATCH_S or more: a clock read costs tens of nanoseconds (far more where the
 * clock is not in the vDSO), as much as one 16-byte AES-NI operation, and read after
 * every operation it would pull the ratio of two fast paths towards 1.
 *
 * Usage:
 *   openssl-matrix-pairbench --a LIB [--a-cap V] --b LIB [--b-cap V] --bytes N
 *                            --window-ms W --seconds S [--decrypt] ALG...
 * Output, one line each (the tool's measure/interleave.py reads it):
 *   +PAIR:side:S:version=TEXT:ia32cap=VALUE   S = 0 (A) or 1 (B); the mask it loaded with
 *   +PAIR:begin:alg=ALG:bytes=N:window_ms=W:seconds=S:direction=encrypt|digest|decrypt
 *   +PAIR:batch:alg=ALG:a=N:b=M                 operations per read of the clock, a side
 *   +PAIR:w:INDEX:SIDE:OPS:ELAPSED_NS:CPU_NS    one timed window
 *   +PAIR:end:alg=ALG:windows=N
 *   +PAIR:error:alg=ALG:side=S:TEXT             the side cannot run ALG (then no windows)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void *(*ptr_fn)(void);
typedef const void *(*byname_fn)(const char *);
typedef void *(*fetch_fn)(void *, const char *, const char *);
typedef int (*digest_fn)(const void *, size_t, unsigned char *, unsigned int *,
                         const void *, void *);
typedef int (*cinit_fn)(void *, const void *, void *, const unsigned char *,
                        const unsigned char *);
typedef int (*cupdate_fn)(void *, unsigned char *, int *, const unsigned char *, int);
typedef const char *(*version_fn)(int);
typedef void *(*pload_fn)(void *, const char *);
typedef int (*ppath_fn)(void *, const char *);
typedef int (*padding_fn)(void *, int);

struct side {
    void *lib;
    const char *path, *cap;
    digest_fn digest;
    byname_fn md_byname, cipher_byname;
    fetch_fn md_fetch, cipher_fetch;
    ptr_fn cipher_ctx_new;
    cinit_fn enc_init, dec_init;
    cupdate_fn enc_update, dec_update;
    padding_fn set_padding;
    /* per algorithm */
    const void *md, *cipher;
    void *ctx;
    long batch;  /* operations between two reads of the clock */
};

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *sym(struct side *s, const char *name)
{
    return dlsym(s->lib, name);
}

static void set_cap(const char *cap)
{
    if (cap != NULL)
        setenv("OPENSSL_ia32cap", cap, 1);
    else
        unsetenv("OPENSSL_ia32cap");
}

static int load(struct side *s, int which)
{
    set_cap(s->cap);
    s->lib = dlmopen(LM_ID_NEWLM, s->path, RTLD_NOW | RTLD_LOCAL);
    if (s->lib == NULL) {
        printf("+PAIR:error:alg=*:side=%d:cannot load %s: %s\n", which, s->path, dlerror());
        return 0;
    }
    s->digest = (digest_fn)sym(s, "EVP_Digest");
    s->md_byname = (byname_fn)sym(s, "EVP_get_digestbyname");
    s->cipher_byname = (byname_fn)sym(s, "EVP_get_cipherbyname");
    s->md_fetch = (fetch_fn)sym(s, "EVP_MD_fetch");
    s->cipher_fetch = (fetch_fn)sym(s, "EVP_CIPHER_fetch");
    s->cipher_ctx_new = (ptr_fn)sym(s, "EVP_CIPHER_CTX_new");
    s->enc_init = (cinit_fn)sym(s, "EVP_EncryptInit_ex");
    s->dec_init = (cinit_fn)sym(s, "EVP_DecryptInit_ex");
    s->enc_update = (cupdate_fn)sym(s, "EVP_EncryptUpdate");
    s->dec_update = (cupdate_fn)sym(s, "EVP_DecryptUpdate");
    s->set_padding = (padding_fn)sym(s, "EVP_CIPHER_CTX_set_padding");
    version_fn version = (version_fn)sym(s, "OpenSSL_version");
    if (!s->digest || !s->md_byname || !s->cipher_byname || !s->cipher_ctx_new
        || !s->enc_init || !s->dec_init || !s->enc_update || !s->dec_update || !version) {
        printf("+PAIR:error:alg=*:side=%d:%s lacks the EVP calls of 1.1.0\n", which, s->path);
        return 0;
    }
    /* the first lookups initialise the library while its mask is in the environment */
    s->md_byname("sha256");
    printf("+PAIR:side:%d:version=%s:ia32cap=%s\n", which, version(0),
           s->cap != NULL ? s->cap : "");
    set_cap(NULL);
    return 1;
}

static void legacy_providers(struct side *s)
{
    pload_fn pload = (pload_fn)sym(s, "OSSL_PROVIDER_load");
    ppath_fn ppath = (ppath_fn)sym(s, "OSSL_PROVIDER_set_default_search_path");
    if (pload == NULL)
        return;
    if (ppath != NULL) {
        char dir[4096];
        const char *slash = strrchr(s->path, '/');
        size_t len = slash != NULL ? (size_t)(slash - s->path) : 0;
        if (len + sizeof("/ossl-modules") < sizeof(dir)) {
            memcpy(dir, s->path, len);
            strcpy(dir + len, "/ossl-modules");
            ppath(NULL, dir);
        }
    }
    pload(NULL, "legacy");
    pload(NULL, "default");
}

static unsigned char key[64], iv[32];

/* prepare side s for alg: 1 ready, 0 not available */
static int prepare(struct side *s, const char *alg, int decrypt, int retry)
{
    s->md = s->cipher = NULL;
    s->md = s->md_fetch != NULL ? s->md_fetch(NULL, alg, NULL) : s->md_byname(alg);
    if (s->md != NULL)
        return 1;
    s->cipher = s->cipher_fetch != NULL ? s->cipher_fetch(NULL, alg, NULL)
                                        : s->cipher_byname(alg);
    if (s->cipher == NULL) {
        if (retry && s->md_fetch != NULL) {
            legacy_providers(s);
            return prepare(s, alg, decrypt, 0);
        }
        return 0;
    }
    s->ctx = s->cipher_ctx_new();
    if (s->ctx == NULL)
        return 0;
    int ok = decrypt ? s->dec_init(s->ctx, s->cipher, NULL, key, iv) > 0
                     : s->enc_init(s->ctx, s->cipher, NULL, key, iv) > 0;
    if (ok && s->set_padding != NULL)
        s->set_padding(s->ctx, 0);  /* whole blocks in place, as speed does */
    return ok;
}

static int one_op(struct side *s, unsigned char *buf, int n, int decrypt)
{
    unsigned char md[64];
    int outl = 0;
    if (s->md != NULL)
        return s->digest(buf, (size_t)n, md, NULL, s->md, NULL);
    if (decrypt)
        return s->dec_update(s->ctx, buf, &outl, buf, n);
    return s->enc_update(s->ctx, buf, &outl, buf, n);
}

/* A side's batch: doubled from 1 until one batch takes BATCH_S or more (a preempted
 * try only makes it smaller); -1 when an operation fails. Warms the side up too. */
#define BATCH_S 20e-6
static long batch_size(struct side *s, unsigned char *buf, int n, int decrypt)
{
    long batch = 1;
    while (batch < (1L << 20)) {
        double t0 = clock_s(CLOCK_MONOTONIC);
        for (long i = 0; i < batch; i++)
            if (one_op(s, buf, n, decrypt) <= 0)
                return -1;
        if (clock_s(CLOCK_MONOTONIC) - t0 >= BATCH_S)
            break;
        batch *= 2;
    }
    return batch;
}

int main(int argc, char **argv)
{
    struct side sides[2];
    memset(sides, 0, sizeof(sides));
    long bytes = 8192;
    double window = 0.005, seconds = 3.0;
    int decrypt = 0;
    static const struct option opts[] = {
        {"a", required_argument, NULL, 'a'}, {"a-cap", required_argument, NULL, 'A'},
        {"b", required_argument, NULL, 'b'}, {"b-cap", required_argument, NULL, 'B'},
        {"bytes", required_argument, NULL, 'n'}, {"window-ms", required_argument, NULL, 'w'},
        {"seconds", required_argument, NULL, 's'}, {"decrypt", no_argument, NULL, 'd'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'a': sides[0].path = optarg; break;
        case 'A': sides[0].cap = optarg; break;
        case 'b': sides[1].path = optarg; break;
        case 'B': sides[1].cap = optarg; break;
        case 'n': bytes = atol(optarg); break;
        case 'w': window = atof(optarg) / 1000.0; break;
        case 's': seconds = atof(optarg); break;
        case 'd': decrypt = 1; break;
        default: return 2;
        }
    }
    if (!sides[0].path || !sides[1].path || optind >= argc || bytes <= 0 || bytes > (1 << 24)
        || window <= 0 || seconds <= 0) {
        fprintf(stderr, "usage: %s --a LIB --b LIB --bytes N --window-ms W --seconds S ALG...\n",
                argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    if (!load(&sides[0], 0) || !load(&sides[1], 1)) {
        fflush(stdout);
        _exit(3);
    }
    unsigned char *buf = calloc((size_t)bytes + 64, 1);
    if (buf == NULL)
        return 2;
    unsigned int x = 12345;  /* the same fixed pseudo-random bytes for both sides */
    for (long i = 0; i < bytes; i++)
        buf[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    for (size_t i = 0; i < sizeof(iv); i++)
        iv[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    for (int a = optind; a < argc; a++) {
        const char *alg = argv[a];
        int ok = 1;
        for (int i = 0; i < 2; i++) {
            if (!prepare(&sides[i], alg, decrypt, 1)) {
                printf("+PAIR:error:alg=%s:side=%d:the library has no %s\n", alg, i, alg);
                ok = 0;
            }
        }
        if (!ok)
            continue;
        for (int i = 0; i < 2 && ok; i++) {
            sides[i].batch = batch_size(&sides[i], buf, (int)bytes, decrypt);
            if (sides[i].batch < 0) {
                printf("+PAIR:error:alg=%s:side=%d:an operation failed\n", alg, i);
                ok = 0;
            }
        }
        if (!ok)
            continue;
        const char *direction = sides[0].md != NULL ? "digest" : decrypt ? "decrypt" : "encrypt";
        printf("+PAIR:begin:alg=%s:bytes=%ld:window_ms=%g:seconds=%g:direction=%s\n", alg,
               bytes, window * 1000.0, seconds, direction);
        printf("+PAIR:batch:alg=%s:a=%ld:b=%ld\n", alg, sides[0].batch, sides[1].batch);
        double start = clock_s(CLOCK_MONOTONIC);
        long w = 0;
        while (clock_s(CLOCK_MONOTONIC) - start < seconds || (w & 3) != 0) {
            int which = ((w & 3) == 0 || (w & 3) == 3) ? 0 : 1;  /* A B B A */
            struct side *s = &sides[which];
            long ops = 0;
            double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC), t;
            do {
                for (long i = 0; i < s->batch && ok; i++)
                    ok = one_op(s, buf, (int)bytes, decrypt) > 0;
                if (!ok) {
                    printf("+PAIR:error:alg=%s:side=%d:an operation failed\n", alg, which);
                    break;
                }
                ops += s->batch;
                t = clock_s(CLOCK_MONOTONIC);
            } while (t - t0 < window);
            if (!ok)
                break;
            double c1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
            printf("+PAIR:w:%ld:%d:%ld:%.0f:%.0f\n", w, which, ops, (t - t0) * 1e9,
                   (c1 - c0) * 1e9);
            w++;
        }
        printf("+PAIR:end:alg=%s:windows=%ld\n", alg, w);
    }
    fflush(stdout);
    _exit(0);  /* no library clean-up handlers of two namespaces at exit */
}
