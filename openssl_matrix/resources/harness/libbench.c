/*
 * openssl-matrix libbench: threaded benchmarks of OpenSSL library paths.
 *
 * Written for openssl-matrix (issue 24). It links against one OpenSSL (the variant's
 * /opt/openssl) and measures, per operation and thread count, how many operations the
 * threads completed in a time (or iteration) budget, the wall time, each thread's own
 * CPU time (CLOCK_THREAD_CPUTIME_ID) and, for the memory operations, the exact bytes
 * requested through OpenSSL's allocator hooks (CRYPTO_set_mem_functions).
 *
 * Usage:
 *   openssl-matrix-libbench [--seconds S] [--iterations N] [--threads T] OP [OP ...]
 *   openssl-matrix-libbench --list
 *
 * Output (stdout), one line per fact, fields separated by ':' as key=value:
 *   +LIB:openssl:header=0x30000140:runtime=OpenSSL 3.0.20 ...
 *   +LIB:begin:op=NAME:threads=T
 *   +HOSTSTAT 0 / 1            (host samples just before and after the timed window,
 *                               read by openssl_matrix's hostacct: /proc/stat lines and
 *                               the container's cgroup CPU usage as "cgroup_ns N")
 *   +LIB:result:op=NAME:threads=T:status=ok:ops=N:elapsed_s=E:cpu_s=C1,C2:
 *               per_thread_ops=N1,N2:wall_start=W0:wall_end=W1:api=...:what=...
 *                              (W0, W1: CLOCK_REALTIME seconds at the timed window's
 *                               start and end, the clock `perf record -k CLOCK_REALTIME`
 *                               stamps samples with: a profile keeps the samples between)
 *   +LIB:result:op=mem-...:threads=1:status=ok:bytes=B:allocs=A:...   (memory)
 *   +LIB:refused:op=NAME:reason=...  (this OpenSSL lacks what the operation needs)
 *   +LIB:end:op=NAME
 * A failure inside an operation gives status=error with the reason (OpenSSL's error
 * queue). Exit status: 0 if every requested operation gave ok or refused, 1 otherwise,
 * 2 on a usage error.
 *
 * Version differences (OPENSSL_VERSION_NUMBER, checked against the headers of the
 * 1.1.1w, 3.0.20 and 3.6.3 release trees): TLS 1.3 from 1.1.1 (TLS1_3_VERSION);
 * EVP_MD_fetch/EVP_CIPHER_fetch from 3.0, EVP_get_digestbyname/cipherbyname before
 * (the result line's api= says which ran); SSL_CTX_set1_groups_list from 1.1.1
 * (set1_curves_list before). 1.0.2 and older are refused at compile time: their
 * threads need locking callbacks this harness does not install, and their
 * CRYPTO_set_mem_functions takes no file/line arguments.
 */
#define _GNU_SOURCE
#define OPENSSL_SUPPRESS_DEPRECATED 1 /* 3.x: HMAC(), CMAC_*: the API every release has */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/opensslv.h>

#if OPENSSL_VERSION_NUMBER < 0x10100000L
#error "openssl-matrix libbench needs OpenSSL 1.1.0 or newer (threads without locking callbacks, CRYPTO_set_mem_functions with file/line)"
#endif

#include <openssl/bio.h>
#include <openssl/cmac.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#if OPENSSL_VERSION_NUMBER >= 0x30000000L
#define LB_HAVE_FETCH 1
#else
#define LB_HAVE_FETCH 0
#endif
#ifdef TLS1_3_VERSION
#define LB_HAVE_TLS13 1
#else
#define LB_HAVE_TLS13 0
#endif

/* ------------------------------------------------------------------------------- */
/* options and small helpers                                                        */

static double opt_seconds = 1.0;
static long opt_iterations = 0; /* per thread; 0: run for opt_seconds */
static int opt_threads = 1;

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The oldest error of OpenSSL's queue, for a result line (':' would split fields). */
static void ssl_reason(char *buf, size_t len, const char *what)
{
    unsigned long e = ERR_get_error();
    char tmp[256];
    size_t i;

    if (e == 0)
        snprintf(buf, len, "%s failed (no OpenSSL error queued)", what);
    else {
        ERR_error_string_n(e, tmp, sizeof(tmp));
        snprintf(buf, len, "%s failed: %s", what, tmp);
    }
    for (i = 0; buf[i]; i++)
        if (buf[i] == ':' || buf[i] == '\n')
            buf[i] = ';';
    ERR_clear_error();
}

/* One host sample in hostacct's format: the cpu and procs_running lines of /proc/stat
 * and the container's cgroup CPU usage in nanoseconds. */
static void host_sample(int n)
{
    char line[1024];
    FILE *f;

    printf("+HOSTSTAT %d\n", n);
    f = fopen("/proc/stat", "r");
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL)
            if (strncmp(line, "cpu", 3) == 0 || strncmp(line, "procs_running", 13) == 0)
                fputs(line, stdout);
        fclose(f);
    }
    f = fopen("/sys/fs/cgroup/cpu.stat", "r");
    if (f != NULL) {
        unsigned long long v;
        char key[64];

        while (fscanf(f, "%63s %llu", key, &v) == 2)
            if (strcmp(key, "usage_usec") == 0) {
                printf("cgroup_ns %llu\n", v * 1000ULL);
                break;
            }
        fclose(f);
    } else {
        const char *v1[] = {"/sys/fs/cgroup/cpuacct/cpuacct.usage",
                            "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", NULL};
        int i;

        for (i = 0; v1[i] != NULL; i++) {
            unsigned long long v;

            f = fopen(v1[i], "r");
            if (f == NULL)
                continue;
            if (fscanf(f, "%llu", &v) == 1)
                printf("cgroup_ns %llu\n", v);
            fclose(f);
            break;
        }
    }
}

/* ------------------------------------------------------------------------------- */
/* memory accounting through OpenSSL's allocator hooks (installed only for mem-* runs,
 * before OpenSSL allocates anything: CRYPTO_set_mem_functions refuses afterwards)    */

typedef struct {
    size_t size;
    size_t pad; /* keeps the returned pointer 16-byte aligned */
} mem_head;

static unsigned long long mem_allocated; /* bytes requested (malloc + realloc's new size) */
static unsigned long long mem_allocs;    /* calls of malloc and realloc */
static long long mem_live;               /* bytes held now */

static void *lb_malloc(size_t n, const char *file, int line)
{
    mem_head *h = malloc(sizeof(*h) + n);

    (void)file;
    (void)line;
    if (h == NULL)
        return NULL;
    h->size = n;
    __atomic_add_fetch(&mem_allocated, n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&mem_allocs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&mem_live, (long long)n, __ATOMIC_RELAXED);
    return h + 1;
}

static void lb_free(void *p, const char *file, int line)
{
    mem_head *h;

    (void)file;
    (void)line;
    if (p == NULL)
        return;
    h = (mem_head *)p - 1;
    __atomic_sub_fetch(&mem_live, (long long)h->size, __ATOMIC_RELAXED);
    free(h);
}

static void *lb_realloc(void *p, size_t n, const char *file, int line)
{
    mem_head *h, *nh;
    size_t old;

    if (p == NULL)
        return lb_malloc(n, file, line);
    if (n == 0) {
        lb_free(p, file, line);
        return NULL;
    }
    h = (mem_head *)p - 1;
    old = h->size;
    nh = realloc(h, sizeof(*nh) + n);
    if (nh == NULL)
        return NULL;
    nh->size = n;
    __atomic_add_fetch(&mem_allocated, n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&mem_allocs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&mem_live, (long long)n - (long long)old, __ATOMIC_RELAXED);
    return nh + 1;
}

/* ------------------------------------------------------------------------------- */
/* keys and certificates, made in memory at start-up (lazily, per operation)       */

static EVP_PKEY *gen_rsa(void)
{
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, NULL);

    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) <= 0
        || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 2048) <= 0
        || EVP_PKEY_keygen(ctx, &pkey) <= 0)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

static EVP_PKEY *gen_ec(void)
{
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);

    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) <= 0
        || EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) <= 0
        || EVP_PKEY_keygen(ctx, &pkey) <= 0)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509_EXTENSION *ext;
    int ok;

    X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &v3, nid, (char *)value);
    if (ext == NULL)
        return 0;
    ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

/* Sign x with SHA-256. An ECDSA signature's DER length varies with its two integers
 * (70-72 bytes for P-256): it is signed again until it has the longest, so that every
 * run's certificate has the same length and the memory figures are the same run to run. */
static int sign_cert(X509 *x, EVP_PKEY *key)
{
    int tries, n = 0;

    for (tries = 0; tries < 200; tries++) {
        n = X509_sign(x, key, EVP_sha256());
        if (n <= 0)
            return 0;
        if (EVP_PKEY_base_id(key) != EVP_PKEY_EC || n == 72)
            return 1;
    }
    return 0;
}

/* A certificate for pkey, signed by issuer_key (self-signed when issuer is NULL). */
static X509 *make_cert(EVP_PKEY *pkey, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                       int ca, long serial)
{
    X509 *x = X509_new();
    X509_NAME *name;

    if (x == NULL)
        return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 2);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer != NULL ? X509_get_subject_name(issuer) : name);
    X509_set_pubkey(x, pkey);
    if (!add_ext(x, issuer != NULL ? issuer : x, NID_basic_constraints,
                 ca ? "critical,CA:TRUE" : "CA:FALSE")
        || !add_ext(x, issuer != NULL ? issuer : x, NID_key_usage,
                    ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature")
        || !add_ext(x, issuer != NULL ? issuer : x, NID_subject_key_identifier, "hash")
        || (issuer != NULL
            && !add_ext(x, issuer, NID_authority_key_identifier, "keyid:always"))
        || !sign_cert(x, issuer_key != NULL ? issuer_key : pkey)) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* ------------------------------------------------------------------------------- */
/* an in-memory transport: two pipes per connection, buffers outside OpenSSL's
 * allocator (so the memory figures count OpenSSL's own bytes only)                 */

#define PIPE_CAP (64 * 1024)

typedef struct {
    unsigned char buf[PIPE_CAP];
    size_t r, w;
} pipe_buf;

typedef struct {
    pipe_buf *in, *out;
} pipe_end;

typedef struct {
    pipe_buf c2s, s2c;
    pipe_end client, server;
} conn_pipes;

static BIO_METHOD *pipe_method;

static int pipe_write(BIO *b, const char *data, int len)
{
    pipe_end *e = BIO_get_data(b);
    pipe_buf *p = e->out;

    BIO_clear_retry_flags(b);
    if (len <= 0)
        return 0;
    if (p->r == p->w)
        p->r = p->w = 0;
    if (p->w + (size_t)len > PIPE_CAP && p->r > 0) {
        memmove(p->buf, p->buf + p->r, p->w - p->r);
        p->w -= p->r;
        p->r = 0;
    }
    if (p->w + (size_t)len > PIPE_CAP) {
        size_t room = PIPE_CAP - p->w;

        if (room == 0) {
            BIO_set_retry_write(b);
            return -1;
        }
        len = (int)room;
    }
    memcpy(p->buf + p->w, data, (size_t)len);
    p->w += (size_t)len;
    return len;
}

static int pipe_read(BIO *b, char *data, int len)
{
    pipe_end *e = BIO_get_data(b);
    pipe_buf *p = e->in;
    size_t have = p->w - p->r;

    BIO_clear_retry_flags(b);
    if (len <= 0)
        return 0;
    if (have == 0) {
        BIO_set_retry_read(b);
        return -1;
    }
    if ((size_t)len > have)
        len = (int)have;
    memcpy(data, p->buf + p->r, (size_t)len);
    p->r += (size_t)len;
    return len;
}

static int pipe_puts(BIO *b, const char *s)
{
    return pipe_write(b, s, (int)strlen(s));
}

static long pipe_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    pipe_end *e = BIO_get_data(b);

    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_DUP:
        return 1;
    case BIO_CTRL_PENDING:
        return e == NULL ? 0 : (long)(e->in->w - e->in->r);
    case BIO_CTRL_WPENDING:
        return 0;
    default:
        return 0;
    }
}

static int pipe_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static int pipe_destroy(BIO *b)
{
    BIO_set_data(b, NULL);
    return 1;
}

static int make_pipe_method(void)
{
    pipe_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "libbench pipe");
    return pipe_method != NULL && BIO_meth_set_write(pipe_method, pipe_write)
        && BIO_meth_set_read(pipe_method, pipe_read)
        && BIO_meth_set_puts(pipe_method, pipe_puts)
        && BIO_meth_set_ctrl(pipe_method, pipe_ctrl)
        && BIO_meth_set_create(pipe_method, pipe_create)
        && BIO_meth_set_destroy(pipe_method, pipe_destroy);
}

static void pipes_reset(conn_pipes *cp)
{
    cp->c2s.r = cp->c2s.w = cp->s2c.r = cp->s2c.w = 0;
    cp->client.in = &cp->s2c;
    cp->client.out = &cp->c2s;
    cp->server.in = &cp->c2s;
    cp->server.out = &cp->s2c;
}

static int attach(SSL *ssl, pipe_end *end)
{
    BIO *b = BIO_new(pipe_method);

    if (b == NULL)
        return 0;
    BIO_set_data(b, end);
    SSL_set_bio(ssl, b, b); /* one BIO for both directions: SSL_free frees it once */
    return 1;
}

/* ------------------------------------------------------------------------------- */
/* TLS contexts: the one protocol, cipher (suite), group and signature scheme       */

typedef struct {
    const char *name;   /* tls1.2 / tls1.3 */
    int version;        /* 0: this OpenSSL lacks it */
} proto_def;

static int proto_version(const char *proto)
{
    if (strcmp(proto, "tls1.2") == 0)
        return TLS1_2_VERSION;
#if LB_HAVE_TLS13
    if (strcmp(proto, "tls1.3") == 0)
        return TLS1_3_VERSION;
#endif
    return 0;
}

typedef struct {
    SSL_CTX *server, *client;
    int version;
} tls_pair;

static int ctx_common(SSL_CTX *ctx, int version, int rsa)
{
    if (!SSL_CTX_set_min_proto_version(ctx, version)
        || !SSL_CTX_set_max_proto_version(ctx, version))
        return 0;
    if (version == TLS1_2_VERSION) {
        /* the same work on every release: ECDHE over P-256, AES-128-GCM, and a
         * PKCS#1 v1.5 / ECDSA signature with SHA-256 (1.1.0 has no RSA-PSS in TLS) */
        if (!SSL_CTX_set_cipher_list(ctx, rsa ? "ECDHE-RSA-AES128-GCM-SHA256"
                                              : "ECDHE-ECDSA-AES128-GCM-SHA256")
            || !SSL_CTX_set1_sigalgs_list(ctx, rsa ? "RSA+SHA256" : "ECDSA+SHA256"))
            return 0;
#if OPENSSL_VERSION_NUMBER >= 0x10101000L
        if (!SSL_CTX_set1_groups_list(ctx, "P-256"))
            return 0;
#else
        if (!SSL_CTX_set1_curves_list(ctx, "P-256"))
            return 0;
#endif
    }
#if LB_HAVE_TLS13
    else {
        /* TLS 1.3: TLS_AES_128_GCM_SHA256 over X25519; the signature is the
         * protocol's (RSA-PSS with SHA-256, ECDSA P-256 with SHA-256) */
        if (!SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256")
            || !SSL_CTX_set1_groups_list(ctx, "X25519"))
            return 0;
    }
#endif
    return 1;
}

static int make_tls_pair(tls_pair *tp, int version, EVP_PKEY *key, X509 *cert, int rsa)
{
    tp->version = version;
    tp->server = SSL_CTX_new(TLS_server_method());
    tp->client = SSL_CTX_new(TLS_client_method());
    if (tp->server == NULL || tp->client == NULL)
        return 0;
    if (!ctx_common(tp->server, version, rsa) || !ctx_common(tp->client, version, rsa))
        return 0;
    if (SSL_CTX_use_certificate(tp->server, cert) != 1
        || SSL_CTX_use_PrivateKey(tp->server, key) != 1)
        return 0;
    /* resumption by session ticket; no server-side session cache to grow or lock */
    SSL_CTX_set_session_cache_mode(tp->server, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_session_cache_mode(tp->client, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_verify(tp->client, SSL_VERIFY_NONE, NULL);
    return 1;
}

/* Drive client and server to the end of the handshake. 1: done, 0: failed. */
static int drive(SSL *c, SSL *s)
{
    int cdone = 0, sdone = 0, round;

    for (round = 0; round < 64 && !(cdone && sdone); round++) {
        if (!cdone) {
            int rc = SSL_do_handshake(c);

            if (rc == 1)
                cdone = 1;
            else {
                int err = SSL_get_error(c, rc);

                if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
                    return 0;
            }
        }
        if (!sdone) {
            int rc = SSL_do_handshake(s);

            if (rc == 1)
                sdone = 1;
            else {
                int err = SSL_get_error(s, rc);

                if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
                    return 0;
            }
        }
    }
    return cdone && sdone;
}

/* Let the client read what the server sent after the handshake (TLS 1.3's session
 * tickets): SSL_read finds no application data and wants more. */
static void client_drain(SSL *c)
{
    char b[16];
    int rc = SSL_read(c, b, sizeof(b));

    if (rc <= 0)
        ERR_clear_error();
}

/* A quiet close (no close_notify exchanged) and SSL_free: SSL_free of a connection
 * that was not shut down would mark its session not resumable. */
static void quiet_free(SSL *ssl)
{
    if (ssl == NULL)
        return;
    SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(ssl);
}

/* One connection: SSL_new both sides, handshake (resuming sess if given), and either
 * SSL_free both (keep NULL) or hand them back. 1 ok, 0 failed, -1 not resumed. */
static int one_handshake(tls_pair *tp, conn_pipes *cp, SSL_SESSION *sess, SSL **keep_c,
                         SSL **keep_s)
{
    SSL *c = SSL_new(tp->client), *s = SSL_new(tp->server);
    int ok = 0;

    pipes_reset(cp);
    if (c == NULL || s == NULL || !attach(c, &cp->client) || !attach(s, &cp->server))
        goto done;
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    if (sess != NULL && SSL_set_session(c, sess) != 1)
        goto done;
    if (!drive(c, s))
        goto done;
    ok = 1;
    if (sess != NULL && !SSL_session_reused(c))
        ok = -1;
 done:
    if (keep_c != NULL && ok == 1) {
        *keep_c = c;
        *keep_s = s;
        return ok;
    }
    quiet_free(c);
    quiet_free(s);
    return ok;
}

/* A resumable session from one full handshake (with its tickets read). */
static SSL_SESSION *first_session(tls_pair *tp, conn_pipes *cp)
{
    SSL *c = NULL, *s = NULL;
    SSL_SESSION *sess;

    if (one_handshake(tp, cp, NULL, &c, &s) != 1)
        return NULL;
    client_drain(c);
    sess = SSL_get1_session(c);
    quiet_free(c);
    quiet_free(s);
    return sess;
}

/* ------------------------------------------------------------------------------- */
/* the shared state of one measured operation                                        */

typedef struct op_def op_def;

typedef struct {
    /* what every thread reads */
    EVP_PKEY *rsa, *ec;
    X509 *rsa_cert, *ec_cert;
    tls_pair tls;
    X509_STORE *store;
    X509 *leaf;
    unsigned char *blob; /* the encoded key a decode operation reads */
    long blob_len;
    int key_type;
} shared_state;

typedef struct {
    int index;
    const op_def *op;
    shared_state *sh;
    pthread_barrier_t *start;
    double deadline; /* set by the main thread before the barrier opens */
    long ops;
    double cpu_s;
    double ended;
    char error[320];
    /* per-thread working state */
    conn_pipes *pipes;
    SSL_SESSION *sess;
    EVP_CIPHER_CTX *cctx;
} worker;

typedef int (*op_fn)(worker *w); /* one operation: 1 ok, 0 failed (w->error set) */

struct op_def {
    const char *name;
    const char *what;   /* one phrase: what one operation is */
    int batch;          /* operations between two clock readings */
    const char *proto;  /* handshakes: tls1.2 / tls1.3 */
    int rsa;            /* key: 1 RSA-2048, 0 ECDSA P-256 */
    int resume;
    op_fn fn;
    const char *api;
};

/* -- the operations -------------------------------------------------------------- */

static int op_handshake(worker *w)
{
    int rc = one_handshake(&w->sh->tls, w->pipes, w->op->resume ? w->sess : NULL, NULL, NULL);

    if (rc == 1)
        return 1;
    if (rc == -1)
        snprintf(w->error, sizeof(w->error), "the session was not resumed");
    else
        ssl_reason(w->error, sizeof(w->error), "handshake");
    return 0;
}

static int op_ssl_new(worker *w)
{
    SSL *s = SSL_new(w->sh->tls.server);

    if (s == NULL) {
        ssl_reason(w->error, sizeof(w->error), "SSL_new");
        return 0;
    }
    SSL_free(s);
    return 1;
}

static int op_decode_pem(worker *w)
{
    BIO *b = BIO_new_mem_buf(w->sh->blob, (int)w->sh->blob_len);
    EVP_PKEY *k = b == NULL ? NULL : PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);

    BIO_free(b);
    if (k == NULL || EVP_PKEY_base_id(k) != w->sh->key_type) {
        EVP_PKEY_free(k);
        ssl_reason(w->error, sizeof(w->error), "PEM_read_bio_PrivateKey");
        return 0;
    }
    EVP_PKEY_free(k);
    return 1;
}

static int op_decode_der(worker *w)
{
    const unsigned char *p = w->sh->blob;
    EVP_PKEY *k = d2i_AutoPrivateKey(NULL, &p, w->sh->blob_len);

    if (k == NULL || EVP_PKEY_base_id(k) != w->sh->key_type) {
        EVP_PKEY_free(k);
        ssl_reason(w->error, sizeof(w->error), "d2i_AutoPrivateKey");
        return 0;
    }
    EVP_PKEY_free(k);
    return 1;
}

static int op_fetch_digest(worker *w)
{
#if LB_HAVE_FETCH
    EVP_MD *md = EVP_MD_fetch(NULL, "SHA2-256", NULL);

    if (md == NULL) {
        ssl_reason(w->error, sizeof(w->error), "EVP_MD_fetch");
        return 0;
    }
    EVP_MD_free(md);
#else
    if (EVP_get_digestbyname("SHA256") == NULL) {
        ssl_reason(w->error, sizeof(w->error), "EVP_get_digestbyname");
        return 0;
    }
#endif
    return 1;
}

static int op_fetch_cipher(worker *w)
{
#if LB_HAVE_FETCH
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);

    if (c == NULL) {
        ssl_reason(w->error, sizeof(w->error), "EVP_CIPHER_fetch");
        return 0;
    }
    EVP_CIPHER_free(c);
#else
    if (EVP_get_cipherbyname("AES-128-GCM") == NULL) {
        ssl_reason(w->error, sizeof(w->error), "EVP_get_cipherbyname");
        return 0;
    }
#endif
    return 1;
}

static const unsigned char key32[32] = "openssl-matrix libbench key 32b";
static const unsigned char iv12[12] = "libbench iv";
static const unsigned char msg64[64] =
    "openssl-matrix libbench: one 64-byte message, per-message set-up";

static int op_cipher_setup(worker *w)
{
    unsigned char out[64 + 16], tag[16];
    int n = 0, m = 0;

    if (EVP_EncryptInit_ex(w->cctx, EVP_aes_128_gcm(), NULL, key32, iv12) != 1
        || EVP_EncryptUpdate(w->cctx, out, &n, msg64, sizeof(msg64)) != 1
        || EVP_EncryptFinal_ex(w->cctx, out + n, &m) != 1
        || EVP_CIPHER_CTX_ctrl(w->cctx, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1) {
        ssl_reason(w->error, sizeof(w->error), "AES-128-GCM encryption");
        return 0;
    }
    return 1;
}

static int op_hmac(worker *w)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;

    if (HMAC(EVP_sha256(), key32, sizeof(key32), msg64, sizeof(msg64), out, &len) == NULL
        || len != 32) {
        ssl_reason(w->error, sizeof(w->error), "HMAC");
        return 0;
    }
    return 1;
}

static int op_cmac(worker *w)
{
    unsigned char out[16];
    size_t len = 0;
    CMAC_CTX *ctx = CMAC_CTX_new();

    if (ctx == NULL || CMAC_Init(ctx, key32, 16, EVP_aes_128_cbc(), NULL) != 1
        || CMAC_Update(ctx, msg64, sizeof(msg64)) != 1 || CMAC_Final(ctx, out, &len) != 1
        || len != 16) {
        CMAC_CTX_free(ctx);
        ssl_reason(w->error, sizeof(w->error), "CMAC");
        return 0;
    }
    CMAC_CTX_free(ctx);
    return 1;
}

static int op_rsa_sign(worker *w)
{
    unsigned char sig[512];
    size_t len = sizeof(sig);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(w->sh->rsa, NULL);

    if (ctx == NULL || EVP_PKEY_sign_init(ctx) <= 0
        || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) <= 0
        || EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) <= 0
        || EVP_PKEY_sign(ctx, sig, &len, key32, 32) <= 0 || len != 256) {
        EVP_PKEY_CTX_free(ctx);
        ssl_reason(w->error, sizeof(w->error), "RSA sign");
        return 0;
    }
    EVP_PKEY_CTX_free(ctx);
    return 1;
}

static int op_x509_verify(worker *w)
{
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok = ctx != NULL && X509_STORE_CTX_init(ctx, w->sh->store, w->sh->leaf, NULL) == 1
        && X509_verify_cert(ctx) == 1;

    if (!ok) {
        if (ctx != NULL && X509_STORE_CTX_get_error(ctx) != X509_V_OK)
            snprintf(w->error, sizeof(w->error), "X509_verify_cert: %s",
                     X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
        else
            ssl_reason(w->error, sizeof(w->error), "X509_verify_cert");
    }
    X509_STORE_CTX_free(ctx);
    return ok;
}

#define HS(n, p, r, res, what) {n, what, 1, p, r, res, op_handshake, NULL}

static const op_def OPS[] = {
    HS("handshake-tls1.2-rsa2048", "tls1.2", 1, 0, "one full TLS 1.2 handshake, both sides"),
    HS("resume-tls1.2-rsa2048", "tls1.2", 1, 1, "one resumed TLS 1.2 handshake (ticket)"),
    HS("handshake-tls1.2-ecdsap256", "tls1.2", 0, 0, "one full TLS 1.2 handshake, both sides"),
    HS("resume-tls1.2-ecdsap256", "tls1.2", 0, 1, "one resumed TLS 1.2 handshake (ticket)"),
    HS("handshake-tls1.3-rsa2048", "tls1.3", 1, 0, "one full TLS 1.3 handshake, both sides"),
    HS("resume-tls1.3-rsa2048", "tls1.3", 1, 1, "one resumed TLS 1.3 handshake (ticket)"),
    HS("handshake-tls1.3-ecdsap256", "tls1.3", 0, 0, "one full TLS 1.3 handshake, both sides"),
    HS("resume-tls1.3-ecdsap256", "tls1.3", 0, 1, "one resumed TLS 1.3 handshake (ticket)"),
    {"ssl-new", "SSL_new + SSL_free on a shared server SSL_CTX", 16, "tls1.2", 1, 0,
     op_ssl_new, NULL},
    {"pkey-decode-pem-rsa2048", "PEM_read_bio_PrivateKey of a PKCS#8 RSA-2048 key", 4, NULL,
     1, 0, op_decode_pem, NULL},
    {"pkey-decode-der-rsa2048", "d2i_AutoPrivateKey of a PKCS#8 RSA-2048 key", 4, NULL, 1, 0,
     op_decode_der, NULL},
    {"pkey-decode-pem-ecp256", "PEM_read_bio_PrivateKey of a PKCS#8 EC P-256 key", 4, NULL, 0,
     0, op_decode_pem, NULL},
    {"pkey-decode-der-ecp256", "d2i_AutoPrivateKey of a PKCS#8 EC P-256 key", 4, NULL, 0, 0,
     op_decode_der, NULL},
#if LB_HAVE_FETCH
    {"fetch-digest", "EVP_MD_fetch(SHA2-256) + EVP_MD_free", 64, NULL, 0, 0, op_fetch_digest,
     "EVP_MD_fetch"},
    {"fetch-cipher", "EVP_CIPHER_fetch(AES-128-GCM) + EVP_CIPHER_free", 64, NULL, 0, 0,
     op_fetch_cipher, "EVP_CIPHER_fetch"},
#else
    {"fetch-digest", "EVP_get_digestbyname(SHA256)", 64, NULL, 0, 0, op_fetch_digest,
     "EVP_get_digestbyname"},
    {"fetch-cipher", "EVP_get_cipherbyname(AES-128-GCM)", 64, NULL, 0, 0, op_fetch_cipher,
     "EVP_get_cipherbyname"},
#endif
    {"cipher-setup", "EVP_EncryptInit_ex(AES-128-GCM, key, iv) + 64-byte message + tag", 16,
     NULL, 0, 0, op_cipher_setup, NULL},
    {"hmac", "HMAC(SHA-256) one-shot of a 64-byte message", 16, NULL, 0, 0, op_hmac, NULL},
    {"cmac", "CMAC_CTX_new + CMAC_Init(AES-128-CBC) + 64-byte message + free", 16, NULL, 0, 0,
     op_cmac, NULL},
    {"rsa-sign", "EVP_PKEY_sign, RSA-2048 PKCS#1 v1.5 over a SHA-256 digest (new ctx)", 1,
     NULL, 1, 0, op_rsa_sign, NULL},
    {"x509-verify", "X509_verify_cert of an RSA-2048 leaf against a store of 51 CAs", 1,
     NULL, 1, 0, op_x509_verify, NULL},
};
#define N_OPS (sizeof(OPS) / sizeof(OPS[0]))

static const char *MEM_OPS[] = {
    "mem-handshake-tls1.2-rsa2048", "mem-handshake-tls1.2-ecdsap256",
    "mem-handshake-tls1.3-rsa2048", "mem-handshake-tls1.3-ecdsap256",
    "mem-idle-tls1.2-rsa2048", "mem-idle-tls1.2-ecdsap256",
    "mem-idle-tls1.3-rsa2048", "mem-idle-tls1.3-ecdsap256",
    "mem-ssl-ctx",
};
#define N_MEM_OPS (sizeof(MEM_OPS) / sizeof(MEM_OPS[0]))

static const op_def *find_op(const char *name)
{
    size_t i;

    for (i = 0; i < N_OPS; i++)
        if (strcmp(OPS[i].name, name) == 0)
            return &OPS[i];
    return NULL;
}

static int is_mem_op(const char *name)
{
    size_t i;

    for (i = 0; i < N_MEM_OPS; i++)
        if (strcmp(MEM_OPS[i], name) == 0)
            return 1;
    return 0;
}

/* Why this OpenSSL cannot run the operation, or NULL. */
static const char *refusal(const char *proto)
{
    if (proto != NULL && proto_version(proto) == 0)
        return "this OpenSSL has no TLS 1.3 (from 1.1.1: TLS1_3_VERSION is not defined in "
               "its headers)";
    return NULL;
}

/* -- shared set-up ---------------------------------------------------------------- */

static EVP_PKEY *g_rsa, *g_ec;
static X509 *g_rsa_cert, *g_ec_cert;

static int need_keys(int rsa, char *why, size_t len)
{
    if (rsa && g_rsa == NULL) {
        g_rsa = gen_rsa();
        g_rsa_cert = g_rsa == NULL ? NULL
            : make_cert(g_rsa, "openssl-matrix.invalid", NULL, NULL, 0, 1);
    }
    if (!rsa && g_ec == NULL) {
        g_ec = gen_ec();
        g_ec_cert = g_ec == NULL ? NULL
            : make_cert(g_ec, "openssl-matrix.invalid", NULL, NULL, 0, 2);
    }
    if ((rsa && g_rsa_cert == NULL) || (!rsa && g_ec_cert == NULL)) {
        ssl_reason(why, len, rsa ? "RSA-2048 key and certificate" : "EC P-256 key and certificate");
        return 0;
    }
    return 1;
}

static int encode_key(shared_state *sh, EVP_PKEY *k, int pem, char *why, size_t len)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL;
    long n;
    int ok = b != NULL && (pem ? PEM_write_bio_PKCS8PrivateKey(b, k, NULL, NULL, 0, NULL, NULL)
                                : i2d_PKCS8PrivateKey_bio(b, k, NULL, NULL, 0, NULL, NULL));

    if (ok) {
        n = BIO_get_mem_data(b, &data);
        sh->blob = malloc((size_t)n);
        memcpy(sh->blob, data, (size_t)n);
        sh->blob_len = n;
    } else
        ssl_reason(why, len, "encoding the key as PKCS#8");
    BIO_free(b);
    return ok;
}

static int make_store(shared_state *sh, char *why, size_t len)
{
    EVP_PKEY *ca_key = gen_rsa(), *filler;
    X509 *ca, *f;
    int i;
    char cn[64];

    if (ca_key == NULL)
        goto fail;
    ca = make_cert(ca_key, "openssl-matrix libbench CA", NULL, NULL, 1, 100);
    sh->leaf = ca == NULL ? NULL : make_cert(sh->rsa, "leaf.openssl-matrix.invalid", ca, ca_key,
                                              0, 101);
    sh->store = X509_STORE_new();
    if (sh->leaf == NULL || sh->store == NULL)
        goto fail;
    /* 50 other CAs (EC P-256 keys: quick to make) so the issuer is looked up among many */
    for (i = 0; i < 50; i++) {
        filler = gen_ec();
        snprintf(cn, sizeof(cn), "openssl-matrix libbench other CA %02d", i);
        f = filler == NULL ? NULL : make_cert(filler, cn, NULL, NULL, 1, 200 + i);
        if (f == NULL || X509_STORE_add_cert(sh->store, f) != 1)
            goto fail;
        X509_free(f);
        EVP_PKEY_free(filler);
    }
    if (X509_STORE_add_cert(sh->store, ca) != 1)
        goto fail;
    X509_free(ca);
    EVP_PKEY_free(ca_key);
    return 1;
 fail:
    ssl_reason(why, len, "making the CA, leaf and store");
    return 0;
}

static int setup_shared(const op_def *op, shared_state *sh, char *why, size_t len)
{
    memset(sh, 0, sizeof(*sh));
    if (!need_keys(op->rsa, why, len))
        return 0;
    sh->rsa = g_rsa;
    sh->ec = g_ec;
    sh->rsa_cert = g_rsa_cert;
    sh->ec_cert = g_ec_cert;
    if (op->proto != NULL
        && !make_tls_pair(&sh->tls, proto_version(op->proto), op->rsa ? g_rsa : g_ec,
                          op->rsa ? g_rsa_cert : g_ec_cert, op->rsa)) {
        ssl_reason(why, len, "setting up the SSL_CTXs");
        return 0;
    }
    if (op->fn == op_decode_pem || op->fn == op_decode_der) {
        sh->key_type = op->rsa ? EVP_PKEY_RSA : EVP_PKEY_EC;
        if (!encode_key(sh, op->rsa ? g_rsa : g_ec, op->fn == op_decode_pem, why, len))
            return 0;
    }
    if (op->fn == op_x509_verify && !make_store(sh, why, len))
        return 0;
    return 1;
}

/* -- threads ---------------------------------------------------------------------- */

static void *run_worker(void *arg)
{
    worker *w = arg;
    const op_def *op = w->op;
    double c0, t;
    long i, n = 0;
    int failed = 0;

    /* per-thread set-up, outside the timed window */
    if (op->fn == op_handshake) {
        w->pipes = malloc(sizeof(*w->pipes));
        if (w->pipes == NULL)
            failed = 1;
        else if (op->resume && (w->sess = first_session(&w->sh->tls, w->pipes)) == NULL) {
            ssl_reason(w->error, sizeof(w->error), "the first full handshake");
            failed = 1;
        }
    }
    if (op->fn == op_cipher_setup && (w->cctx = EVP_CIPHER_CTX_new()) == NULL)
        failed = 1;
    pthread_barrier_wait(w->start);
    c0 = thread_cpu();
    while (!failed) {
        for (i = 0; i < op->batch && (opt_iterations == 0 || n < opt_iterations); i++) {
            if (!op->fn(w)) {
                failed = 1;
                break;
            }
            n++;
        }
        if (opt_iterations > 0 ? n >= opt_iterations : (t = now_mono()) >= w->deadline)
            break;
    }
    (void)t;
    w->ended = now_mono();
    w->cpu_s = thread_cpu() - c0;
    w->ops = n;
    if (failed && w->error[0] == '\0')
        snprintf(w->error, sizeof(w->error), "set-up failed");
    SSL_SESSION_free(w->sess);
    EVP_CIPHER_CTX_free(w->cctx);
    free(w->pipes);
    return NULL;
}

static void free_shared(shared_state *sh)
{
    SSL_CTX_free(sh->tls.server);
    SSL_CTX_free(sh->tls.client);
    X509_STORE_free(sh->store);
    X509_free(sh->leaf);
    free(sh->blob);
}

static int measure(const op_def *op)
{
    shared_state sh;
    worker *ws;
    pthread_t *tids;
    pthread_barrier_t start;
    char why[320] = "";
    const char *refused = refusal(op->proto);
    double t0, t1;
    struct timespec w0, w1;
    long total = 0;
    int i, errors = 0;

    printf("+LIB:begin:op=%s:threads=%d\n", op->name, opt_threads);
    if (refused != NULL) {
        printf("+LIB:refused:op=%s:reason=%s\n+LIB:end:op=%s\n", op->name, refused, op->name);
        return 1;
    }
    if (!setup_shared(op, &sh, why, sizeof(why))) {
        printf("+LIB:result:op=%s:threads=%d:status=error:reason=%s\n+LIB:end:op=%s\n",
               op->name, opt_threads, why, op->name);
        free_shared(&sh);
        return 0;
    }
    ws = calloc((size_t)opt_threads, sizeof(*ws));
    tids = calloc((size_t)opt_threads, sizeof(*tids));
    pthread_barrier_init(&start, NULL, (unsigned)opt_threads + 1);
    for (i = 0; i < opt_threads; i++) {
        ws[i].index = i;
        ws[i].op = op;
        ws[i].sh = &sh;
        ws[i].start = &start;
        if (pthread_create(&tids[i], NULL, run_worker, &ws[i]) != 0) {
            fprintf(stderr, "pthread_create: %s\n", strerror(errno));
            exit(3);
        }
    }
    fflush(stdout);
    host_sample(0);
    fflush(stdout);
    clock_gettime(CLOCK_REALTIME, &w0);
    t0 = now_mono();
    for (i = 0; i < opt_threads; i++)
        ws[i].deadline = t0 + opt_seconds;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    pthread_barrier_wait(&start);
    for (i = 0; i < opt_threads; i++)
        pthread_join(tids[i], NULL);
    t1 = now_mono();
    clock_gettime(CLOCK_REALTIME, &w1);
    host_sample(1);
    for (i = 0; i < opt_threads; i++) {
        total += ws[i].ops;
        if (ws[i].error[0] != '\0')
            errors++;
    }
    printf("+LIB:result:op=%s:threads=%d:status=%s:ops=%ld:elapsed_s=%.6f:cpu_s=", op->name,
           opt_threads, errors ? "error" : "ok", total, t1 - t0);
    for (i = 0; i < opt_threads; i++)
        printf("%s%.6f", i ? "," : "", ws[i].cpu_s);
    printf(":per_thread_ops=");
    for (i = 0; i < opt_threads; i++)
        printf("%s%ld", i ? "," : "", ws[i].ops);
    printf(":wall_start=%lld.%09ld:wall_end=%lld.%09ld", (long long)w0.tv_sec, w0.tv_nsec,
           (long long)w1.tv_sec, w1.tv_nsec);
    printf(":api=%s:what=%s", op->api != NULL ? op->api : "-", op->what);
    if (errors) {
        for (i = 0; i < opt_threads && ws[i].error[0] == '\0'; i++)
            ;
        printf(":reason=thread %d: %s", i, ws[i].error);
    }
    printf("\n+LIB:end:op=%s\n", op->name);
    fflush(stdout);
    pthread_barrier_destroy(&start);
    free(ws);
    free(tids);
    free_shared(&sh);
    return errors == 0;
}

/* -- memory ----------------------------------------------------------------------- */

#define MEM_WARMUP 3
/* Measurements per memory figure. RSA and the SSL_CTX give one value every time; an
 * ECDSA handshake's bytes vary by a few with its signatures' DER length (70-72 bytes),
 * so the figure is the most frequent value of the repeats (min and max beside it). */
#define MEM_REPEATS 63

typedef struct {
    long long v[MEM_REPEATS];
    int n;
} mem_series;

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return x < y ? -1 : x > y;
}

/* The most frequent value (the smallest of equally frequent ones), min and max. */
static void mem_mode(const mem_series *m, long long *mode, long long *lo, long long *hi)
{
    long long s[MEM_REPEATS];
    int i, run = 1, best = 0;

    memcpy(s, m->v, sizeof(long long) * (size_t)m->n);
    qsort(s, (size_t)m->n, sizeof(long long), cmp_ll);
    *lo = s[0];
    *hi = s[m->n - 1];
    *mode = s[0];
    for (i = 1; i <= m->n; i++) {
        if (i < m->n && s[i] == s[i - 1]) {
            run++;
            continue;
        }
        if (run > best) {
            best = run;
            *mode = s[i - 1];
        }
        run = 1;
    }
}

static int measure_mem(const char *name)
{
    char proto[16] = "", key[16] = "", why[320] = "";
    const char *refused = NULL;
    int rsa, ok = 0, i;
    shared_state sh;
    op_def fake;
    conn_pipes *cp = malloc(sizeof(*cp));

    memset(&fake, 0, sizeof(fake));
    memset(&sh, 0, sizeof(sh));
    printf("+LIB:begin:op=%s:threads=1\n", name);
    if (strcmp(name, "mem-ssl-ctx") == 0) {
        SSL_CTX *warm[MEM_WARMUP], *ctx;
        long long live0;

        if (!need_keys(1, why, sizeof(why)))
            goto out;
        /* warm: the first contexts load what every later one shares */
        for (i = 0; i < MEM_WARMUP; i++) {
            warm[i] = SSL_CTX_new(TLS_server_method());
            if (warm[i] == NULL || SSL_CTX_use_certificate(warm[i], g_rsa_cert) != 1
                || SSL_CTX_use_PrivateKey(warm[i], g_rsa) != 1) {
                ssl_reason(why, sizeof(why), "SSL_CTX set-up");
                goto out;
            }
        }
        live0 = __atomic_load_n(&mem_live, __ATOMIC_SEQ_CST);
        {
            unsigned long long a0 = mem_allocated, n0 = mem_allocs;

            ctx = SSL_CTX_new(TLS_server_method());
            if (ctx == NULL || SSL_CTX_use_certificate(ctx, g_rsa_cert) != 1
                || SSL_CTX_use_PrivateKey(ctx, g_rsa) != 1) {
                ssl_reason(why, sizeof(why), "SSL_CTX set-up");
                goto out;
            }
            printf("+LIB:result:op=%s:threads=1:status=ok:bytes=%lld:allocated=%llu:"
                   "allocs=%llu:what=bytes held by one more server SSL_CTX (TLS_server_method, "
                   "RSA-2048 certificate and key), after %d warm-up contexts\n", name,
                   __atomic_load_n(&mem_live, __ATOMIC_SEQ_CST) - live0, mem_allocated - a0,
                   mem_allocs - n0, MEM_WARMUP);
        }
        SSL_CTX_free(ctx);
        for (i = 0; i < MEM_WARMUP; i++)
            SSL_CTX_free(warm[i]);
        ok = 1;
        goto out;
    }
    if (sscanf(name, "mem-%*[a-z]-%15[a-z0-9.]-%15[a-z0-9]", proto, key) != 2) {
        snprintf(why, sizeof(why), "not a memory operation");
        goto out;
    }
    rsa = strcmp(key, "rsa2048") == 0;
    refused = refusal(proto);
    if (refused != NULL) {
        printf("+LIB:refused:op=%s:reason=%s\n", name, refused);
        ok = 1;
        goto out;
    }
    fake.rsa = rsa;
    fake.proto = proto;
    fake.name = name;
    if (cp == NULL || !setup_shared(&fake, &sh, why, sizeof(why)))
        goto out;
    for (i = 0; i < MEM_WARMUP; i++)
        if (one_handshake(&sh.tls, cp, NULL, NULL, NULL) != 1) {
            ssl_reason(why, sizeof(why), "warm-up handshake");
            goto out;
        }
    if (strncmp(name, "mem-handshake-", 14) == 0) {
        mem_series bytes = {{0}, 0}, allocs = {{0}, 0}, leaked = {{0}, 0};
        long long b, blo, bhi, a, alo, ahi, l, llo, lhi;

        for (i = 0; i < MEM_REPEATS; i++) {
            unsigned long long a0 = mem_allocated, n0 = mem_allocs;
            long long live0 = mem_live;

            if (one_handshake(&sh.tls, cp, NULL, NULL, NULL) != 1) {
                ssl_reason(why, sizeof(why), "handshake");
                goto out;
            }
            bytes.v[bytes.n++] = (long long)(mem_allocated - a0);
            allocs.v[allocs.n++] = (long long)(mem_allocs - n0);
            leaked.v[leaked.n++] = mem_live - live0;
        }
        mem_mode(&bytes, &b, &blo, &bhi);
        mem_mode(&allocs, &a, &alo, &ahi);
        mem_mode(&leaked, &l, &llo, &lhi);
        printf("+LIB:result:op=%s:threads=1:status=ok:bytes=%lld:bytes_min=%lld:bytes_max=%lld:"
               "allocs=%lld:leaked=%lld:repeats=%d:what=bytes requested from OpenSSL's "
               "allocator during one full handshake (SSL_new to SSL_free, client and server; "
               "the most frequent of %d, after %d warm-up handshakes)\n",
               name, b, blo, bhi, a, l, MEM_REPEATS, MEM_REPEATS, MEM_WARMUP);
    } else {
        mem_series server = {{0}, 0}, client = {{0}, 0};
        long long sv, slo, shi, cv, clo, chi;

        for (i = 0; i < MEM_REPEATS; i++) {
            SSL *c = NULL, *s = NULL;
            long long live0 = mem_live, both;

            if (one_handshake(&sh.tls, cp, NULL, &c, &s) != 1) {
                ssl_reason(why, sizeof(why), "handshake");
                goto out;
            }
            client_drain(c);
            both = mem_live - live0;
            quiet_free(c);
            server.v[server.n++] = mem_live - live0;
            client.v[client.n++] = both - server.v[server.n - 1];
            quiet_free(s);
        }
        mem_mode(&server, &sv, &slo, &shi);
        mem_mode(&client, &cv, &clo, &chi);
        printf("+LIB:result:op=%s:threads=1:status=ok:bytes=%lld:bytes_min=%lld:bytes_max=%lld:"
               "client_bytes=%lld:repeats=%d:what=bytes held by the server's SSL of one idle "
               "connection after its full handshake (client_bytes: the client's; the most "
               "frequent of %d)\n", name, sv, slo, shi, cv, MEM_REPEATS, MEM_REPEATS);
    }
    ok = 1;
 out:
    if (!ok)
        printf("+LIB:result:op=%s:threads=1:status=error:reason=%s\n", name, why);
    printf("+LIB:end:op=%s\n", name);
    free_shared(&sh);
    free(cp);
    return ok;
}

/* -- main ------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: openssl-matrix-libbench [--seconds S] [--iterations N] "
            "[--threads T] OP [OP ...] | --list\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int i, first = 1, all_ok = 1, mem = 0;

    for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
        if (strcmp(argv[first], "--list") == 0) {
            size_t k;

            for (k = 0; k < N_OPS; k++) {
                const char *r = refusal(OPS[k].proto);

                printf("%s\t%s\t%s\n", OPS[k].name, r == NULL ? "available" : "refused",
                       r == NULL ? OPS[k].what : r);
            }
            for (k = 0; k < N_MEM_OPS; k++) {
                char proto[16] = "";
                const char *r = NULL;

                if (strcmp(MEM_OPS[k], "mem-ssl-ctx") != 0
                    && sscanf(MEM_OPS[k], "mem-%*[a-z]-%15[a-z0-9.]", proto) == 1)
                    r = refusal(proto);
                printf("%s\t%s\t%s\n", MEM_OPS[k], r == NULL ? "available" : "refused",
                       r == NULL ? "memory" : r);
            }
            return 0;
        }
        if (first + 1 >= argc)
            usage();
        if (strcmp(argv[first], "--seconds") == 0)
            opt_seconds = atof(argv[++first]);
        else if (strcmp(argv[first], "--iterations") == 0)
            opt_iterations = atol(argv[++first]);
        else if (strcmp(argv[first], "--threads") == 0)
            opt_threads = atoi(argv[++first]);
        else
            usage();
    }
    if (first >= argc || opt_threads < 1 || opt_threads > 256 || opt_seconds <= 0)
        usage();
    for (i = first; i < argc; i++) {
        if (is_mem_op(argv[i]))
            mem = 1;
        else if (find_op(argv[i]) == NULL) {
            fprintf(stderr, "openssl-matrix-libbench: unknown operation %s (--list lists "
                    "them)\n", argv[i]);
            return 2;
        }
    }
    for (i = first; mem && i < argc; i++)
        if (!is_mem_op(argv[i])) {
            fprintf(stderr, "openssl-matrix-libbench: memory operations run alone (their "
                    "allocator hooks would slow %s down): run it in another process\n",
                    argv[i]);
            return 2;
        }
    if (mem && !CRYPTO_set_mem_functions(lb_malloc, lb_realloc, lb_free)) {
        fprintf(stderr, "openssl-matrix-libbench: CRYPTO_set_mem_functions refused "
                "(OpenSSL allocated before main)\n");
        return 3;
    }
    OPENSSL_init_ssl(0, NULL);
    if (!make_pipe_method()) {
        fprintf(stderr, "openssl-matrix-libbench: cannot make the pipe BIO method\n");
        return 3;
    }
    printf("+LIB:openssl:header=0x%08lx:runtime=%s:memory_hooks=%d\n",
           (unsigned long)OPENSSL_VERSION_NUMBER, OpenSSL_version(OPENSSL_VERSION), mem);
    for (i = first; i < argc; i++) {
        if (is_mem_op(argv[i]))
            all_ok &= measure_mem(argv[i]);
        else
            all_ok &= measure(find_op(argv[i]));
        fflush(stdout);
    }
    return all_ok ? 0 : 1;
}
