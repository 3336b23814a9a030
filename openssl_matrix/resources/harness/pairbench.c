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
 * EVP_*_fetch (3.0 on) and looked up by name before that (and, last, where a fetch
 * finds nothing: 3.0's development trees). Needs 1.1.0 or newer.
 * An ALG that names one of the library harness's single-call operations (libbench.c:
 * pkey-decode-{pem,der}-{rsa2048,ecp256}, cmac, hmac) runs that operation's calls instead,
 * one operation per call sequence as libbench does it; the key a decoding reads is made
 * once by side A (PKCS#8, unencrypted) and the same bytes are decoded by both sides.
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
 *       (a library operation: bytes=0, direction=operation)
 *   +PAIR:batch:alg=ALG:a=N:b=M                 operations per read of the clock, a side
 *   +PAIR:w:INDEX:SIDE:OPS:ELAPSED_NS:CPU_NS    one timed window
 *   +PAIR:end:alg=ALG:windows=N
 *   +PAIR:error:alg=ALG:side=S:TEXT             the side cannot run ALG (then no windows)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <pthread.h>
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
typedef void *(*memin_fn)(const void *, int);
typedef int (*free_int_fn)(void *);
typedef void (*free_fn)(void *);
typedef void *(*pemread_fn)(void *, void **, void *, void *);
typedef void *(*d2i_fn)(void **, const unsigned char **, long);
typedef int (*baseid_fn)(const void *);
typedef const void *(*getter_fn)(void);
typedef int (*cmacinit_fn)(void *, const void *, size_t, const void *, void *);
typedef int (*cmacupdate_fn)(void *, const void *, size_t);
typedef int (*cmacfinal_fn)(void *, unsigned char *, size_t *);
typedef unsigned char *(*hmac_fn)(const void *, const void *, int, const unsigned char *,
                                  size_t, unsigned char *, unsigned int *);

/* The library harness's operations this harness also runs (same calls, libbench.c). */
enum { OP_EVP = 0, OP_PEM, OP_DER, OP_CMAC, OP_HMAC };
struct libop {
    const char *name;
    int kind, rsa;
};
static const struct libop LIBOPS[] = {
    {"pkey-decode-pem-rsa2048", OP_PEM, 1}, {"pkey-decode-der-rsa2048", OP_DER, 1},
    {"pkey-decode-pem-ecp256", OP_PEM, 0},  {"pkey-decode-der-ecp256", OP_DER, 0},
    {"cmac", OP_CMAC, 0},                   {"hmac", OP_HMAC, 0},
};
#define N_LIBOPS (sizeof(LIBOPS) / sizeof(LIBOPS[0]))
#define PKEY_RSA 6     /* EVP_PKEY_RSA = NID_rsaEncryption, in every release */
#define PKEY_EC 408    /* EVP_PKEY_EC = NID_X9_62_id_ecPublicKey */

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
    /* library operations (NULL where the library lacks the call: then not run) */
    memin_fn bio_mem_buf;
    free_int_fn bio_free;
    pemread_fn pem_read;
    d2i_fn d2i_auto;
    free_fn pkey_free, cmac_free;
    baseid_fn base_id;
    getter_fn aes_128_cbc, sha256;
    ptr_fn cmac_new;
    cmacinit_fn cmac_init;
    cmacupdate_fn cmac_update;
    cmacfinal_fn cmac_final;
    hmac_fn hmac;
    /* per algorithm */
    const struct libop *op;  /* a library operation, or NULL: an EVP digest or cipher */
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

/* Each namespace has its own copy of libc, and each copy numbers its pthread keys from 0,
 * but a thread's key slots are one array: two libraries in two namespaces would read each
 * other's thread-local data (1.1.1's and 3.0's random-number and error state: seen as a
 * crash in 1.1.1's EVP_PKEY_free after 3.0 was loaded beside it). So side B's libc takes
 * KEYS_APART keys before its library loads, and that library's keys come after side A's. */
#define KEYS_APART 128
typedef int (*keycreate_fn)(pthread_key_t *, void (*)(void *));

static void *open_apart(const char *path, int which)
{
    void *libc = dlmopen(LM_ID_NEWLM, "libc.so.6", RTLD_NOW | RTLD_LOCAL);
    Lmid_t lm;
    if (libc == NULL || dlinfo(libc, RTLD_DI_LMID, &lm) != 0)
        return NULL;
    keycreate_fn keycreate = (keycreate_fn)dlsym(libc, "pthread_key_create");
    pthread_key_t unused;
    for (int i = 0; keycreate != NULL && i < which * KEYS_APART; i++)
        if (keycreate(&unused, NULL) != 0)
            return NULL;
    return dlmopen(lm, path, RTLD_NOW | RTLD_LOCAL);
}

static int load(struct side *s, int which)
{
    set_cap(s->cap);
    s->lib = open_apart(s->path, which);
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
    s->bio_mem_buf = (memin_fn)sym(s, "BIO_new_mem_buf");
    s->bio_free = (free_int_fn)sym(s, "BIO_free");
    s->pem_read = (pemread_fn)sym(s, "PEM_read_bio_PrivateKey");
    s->d2i_auto = (d2i_fn)sym(s, "d2i_AutoPrivateKey");
    s->pkey_free = (free_fn)sym(s, "EVP_PKEY_free");
    s->base_id = (baseid_fn)sym(s, "EVP_PKEY_get_base_id");  /* 3.0 on; a macro's name */
    if (s->base_id == NULL)
        s->base_id = (baseid_fn)sym(s, "EVP_PKEY_base_id");  /* before 3.0 */
    s->aes_128_cbc = (getter_fn)sym(s, "EVP_aes_128_cbc");
    s->sha256 = (getter_fn)sym(s, "EVP_sha256");
    s->cmac_new = (ptr_fn)sym(s, "CMAC_CTX_new");
    s->cmac_init = (cmacinit_fn)sym(s, "CMAC_Init");
    s->cmac_update = (cmacupdate_fn)sym(s, "CMAC_Update");
    s->cmac_final = (cmacfinal_fn)sym(s, "CMAC_Final");
    s->cmac_free = (free_fn)sym(s, "CMAC_CTX_free");
    s->hmac = (hmac_fn)sym(s, "HMAC");
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

static unsigned char mac_msg[64];  /* the message a MAC is computed over, per operation */

/* The private key a decoding operation reads: made by side A, as the library harness
 * makes it (RSA-2048, or EC P-256 on the named curve), encoded as unencrypted PKCS#8. */
static unsigned char *key_blob;
static long key_blob_len;

typedef void *(*pctx_id_fn)(int, void *);
typedef int (*pctx_ctrl_fn)(void *, int, int, int, int, void *);
typedef int (*keygen_fn)(void *, void **);
typedef int (*ctx_int_fn)(void *);
typedef void *(*bio_new_fn)(const void *);
typedef long (*bio_ctrl_fn)(void *, int, long, void *);
typedef int (*encode_fn)(void *, void *, const void *, char *, int, void *, void *);

#define CTRL_RSA_KEYGEN_BITS 0x1003          /* EVP_PKEY_ALG_CTRL + 3 */
#define CTRL_EC_PARAMGEN_CURVE_NID 0x1001    /* EVP_PKEY_ALG_CTRL + 1 */
#define OP_PARAMGEN_KEYGEN ((1 << 1) | (1 << 2))
#define NID_P256 415                         /* NID_X9_62_prime256v1 */
#define BIO_CTRL_INFO 3                      /* BIO_get_mem_data's control */

static int make_key(struct side *s, const struct libop *op)
{
    pctx_id_fn ctx_new = (pctx_id_fn)sym(s, "EVP_PKEY_CTX_new_id");
    ctx_int_fn kg_init = (ctx_int_fn)sym(s, "EVP_PKEY_keygen_init");
    pctx_ctrl_fn ctrl = (pctx_ctrl_fn)sym(s, "EVP_PKEY_CTX_ctrl");
    keygen_fn keygen = (keygen_fn)sym(s, "EVP_PKEY_keygen");
    free_fn ctx_free = (free_fn)sym(s, "EVP_PKEY_CTX_free");
    getter_fn s_mem = (getter_fn)sym(s, "BIO_s_mem");
    bio_new_fn bio_new = (bio_new_fn)sym(s, "BIO_new");
    bio_ctrl_fn bio_ctrl = (bio_ctrl_fn)sym(s, "BIO_ctrl");
    encode_fn encode = (encode_fn)sym(s, op->kind == OP_PEM ? "PEM_write_bio_PKCS8PrivateKey"
                                                            : "i2d_PKCS8PrivateKey_bio");
    if (!ctx_new || !kg_init || !ctrl || !keygen || !ctx_free || !s_mem || !bio_new
        || !bio_ctrl || !encode || !s->pkey_free || !s->bio_free)
        return 0;
    void *pkey = NULL, *ctx = ctx_new(op->rsa ? PKEY_RSA : PKEY_EC, NULL);
    int ok = ctx != NULL && kg_init(ctx) > 0
        && (op->rsa ? ctrl(ctx, PKEY_RSA, 1 << 2, CTRL_RSA_KEYGEN_BITS, 2048, NULL)
                    : ctrl(ctx, PKEY_EC, OP_PARAMGEN_KEYGEN, CTRL_EC_PARAMGEN_CURVE_NID,
                           NID_P256, NULL)) > 0
        && keygen(ctx, &pkey) > 0;
    if (ctx != NULL)
        ctx_free(ctx);
    void *bio = ok ? bio_new(s_mem()) : NULL;
    char *data = NULL;
    long n = 0;
    ok = bio != NULL && encode(bio, pkey, NULL, NULL, 0, NULL, NULL) > 0
        && (n = bio_ctrl(bio, BIO_CTRL_INFO, 0, &data)) > 0;
    free(key_blob);
    key_blob = ok ? malloc((size_t)n) : NULL;
    if (key_blob != NULL) {
        memcpy(key_blob, data, (size_t)n);
        key_blob_len = n;
    }
    if (bio != NULL)
        s->bio_free(bio);
    if (pkey != NULL)
        s->pkey_free(pkey);
    return key_blob != NULL;
}

/* prepare side s for the library operation op: 1 ready, 0 the library lacks a call */
static int prepare_op(struct side *s, const struct libop *op)
{
    s->op = op;
    switch (op->kind) {
    case OP_PEM:
    case OP_DER:
        return s->bio_mem_buf && s->bio_free && s->pem_read && s->d2i_auto && s->pkey_free
            && s->base_id && key_blob != NULL;
    case OP_CMAC:
        return s->cmac_new && s->cmac_init && s->cmac_update && s->cmac_final && s->cmac_free
            && s->aes_128_cbc;
    default:
        return s->hmac && s->sha256;
    }
}

/* One library operation, the calls libbench.c makes for it: 1 done, 0 failed. */
static int lib_op(struct side *s)
{
    const struct libop *op = s->op;
    if (op->kind == OP_PEM || op->kind == OP_DER) {
        void *k;
        if (op->kind == OP_PEM) {
            void *b = s->bio_mem_buf(key_blob, (int)key_blob_len);
            k = b == NULL ? NULL : s->pem_read(b, NULL, NULL, NULL);
            if (b != NULL)
                s->bio_free(b);
        } else {
            const unsigned char *p = key_blob;
            k = s->d2i_auto(NULL, &p, key_blob_len);
        }
        int ok = k != NULL && s->base_id(k) == (op->rsa ? PKEY_RSA : PKEY_EC);
        if (k != NULL)
            s->pkey_free(k);
        return ok;
    }
    unsigned char out[64];
    if (op->kind == OP_CMAC) {
        size_t len = 0;
        void *ctx = s->cmac_new();
        int ok = ctx != NULL && s->cmac_init(ctx, key, 16, s->aes_128_cbc(), NULL) == 1
            && s->cmac_update(ctx, mac_msg, sizeof(mac_msg)) == 1
            && s->cmac_final(ctx, out, &len) == 1 && len == 16;
        if (ctx != NULL)
            s->cmac_free(ctx);
        return ok;
    }
    unsigned int len = 0;
    return s->hmac(s->sha256(), key, 32, mac_msg, sizeof(mac_msg), out, &len) != NULL
        && len == 32;
}

static const struct libop *find_libop(const char *alg)
{
    for (size_t i = 0; i < N_LIBOPS; i++)
        if (strcmp(LIBOPS[i].name, alg) == 0)
            return &LIBOPS[i];
    return NULL;
}

/* prepare side s for alg: 1 ready, 0 not available */
static int prepare(struct side *s, const char *alg, int decrypt, int retry)
{
    s->op = NULL;
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
        if (s->md_fetch == NULL)
            return 0;
        /* fetched nothing, even with the legacy provider: master's trees of 2019 have
         * EVP_MD_fetch, but their providers know only some names ("sha256" is found by
         * name alone there): the name's lookup, last */
        if ((s->md = s->md_byname(alg)) != NULL)
            return 1;
        if ((s->cipher = s->cipher_byname(alg)) == NULL)
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
    if (s->op != NULL)
        return lib_op(s);
    if (s->md != NULL)
        return s->digest(buf, (size_t)n, md, NULL, s->md, NULL);
    if (decrypt)
        return s->dec_update(s->ctx, buf, &outl, buf, n);
    return s->enc_update(s->ctx, buf, &outl, buf, n);
}

/* A side's batch: doubled from 1 until one batch takes BATCH_S or more (a preempted
 * try only makes it smaller); -1 when an operation fails. The side is warmed up first
 * for WARM_S: a first call can be hundreds of times slower than the next (3.0 fetches and
 * caches the algorithm of a CMAC on its first use), and sized on it a batch of fast
 * operations would be one operation, the clock read after each. */
#define BATCH_S 20e-6
#define WARM_S 2e-3
static long batch_size(struct side *s, unsigned char *buf, int n, int decrypt)
{
    long batch = 1;
    double w0 = clock_s(CLOCK_MONOTONIC);
    do {
        if (one_op(s, buf, n, decrypt) <= 0)
            return -1;
    } while (clock_s(CLOCK_MONOTONIC) - w0 < WARM_S);
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
    for (size_t i = 0; i < sizeof(mac_msg); i++)
        mac_msg[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    for (int a = optind; a < argc; a++) {
        const char *alg = argv[a];
        const struct libop *op = find_libop(alg);
        int ok = 1;
        if (op != NULL && (op->kind == OP_PEM || op->kind == OP_DER)
            && !make_key(&sides[0], op)) {
            printf("+PAIR:error:alg=%s:side=0:cannot make and encode the key\n", alg);
            continue;
        }
        for (int i = 0; i < 2; i++) {
            if (op != NULL ? !prepare_op(&sides[i], op) : !prepare(&sides[i], alg, decrypt, 1)) {
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
        const char *direction = op != NULL ? "operation" : sides[0].md != NULL ? "digest"
                                : decrypt ? "decrypt" : "encrypt";
        printf("+PAIR:begin:alg=%s:bytes=%ld:window_ms=%g:seconds=%g:direction=%s\n", alg,
               op != NULL ? 0L : bytes, window * 1000.0, seconds, direction);
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
