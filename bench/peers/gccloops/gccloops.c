// gccloops: the C anchor of the peer suite. The kernels are the plain loops a C
// programmer writes, compiled by gcc.go at run time with
// gcc -O3 -march=native -ffast-math (so gcc vectorizes them for this CPU and
// reassociates the reductions), and timed here as peers.Measure times Go
// calls: a call count that takes about one round, then rounds rounds, the
// median round's time per call.
//
//	gccloops OP N ROUND_NS ROUNDS   prints the ns per call of OP at length N
//	gccloops -serve OP N ROUND_NS   times rounds of OP at length N on demand
//	gccloops -list                  prints the names of the ops, one a line
//
// -serve is the main job's mode: it calibrates a call count that takes about
// ROUND_NS, prints "ready", then for each line read from stdin runs one
// untimed call and one round of that count and prints the round's ns per
// call, until stdin ends; so the parent interleaves the C loop's rounds with
// its own implementations' (peers.MeasureAll), and a changing load falls on
// all of them alike.
//
// OP is a peer suite op name (Add, DotF64, ...); inputs are in [0.5, 1.5) as
// the suite's. The exit status is 2 for an op this file does not have.
//
// OP Read is the read-bandwidth probe of the main job's roofline column: it
// reads N bytes (N a multiple of 512) with nothing but loads and ORs, in
// eight independent 64-byte and, separately, four 32-byte accumulators (on
// Zen 5 the narrower loads stream faster from L2), and prints the faster.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

// The binary kernels of both widths, written once.
#define BINARY(name, T, expr)                                                   \
	static NOINLINE void name(T *restrict d, const T *restrict a,               \
	                          const T *restrict b, long n) {                    \
		for (long i = 0; i < n; i++) d[i] = (expr);                              \
	}
#define UNARY(name, T, expr)                                                    \
	static NOINLINE void name(T *restrict d, const T *restrict a, long n) {     \
		for (long i = 0; i < n; i++) d[i] = (expr);                              \
	}
#define REDUCE(name, T, init, step)                                             \
	static NOINLINE T name(const T *restrict a, const T *restrict b, long n) {  \
		(void)b;                                                                 \
		T s = (init);                                                            \
		for (long i = 0; i < n; i++) s = (step);                                 \
		return s;                                                                \
	}

#define FAMILY(T, S)                                                            \
	BINARY(add##S, T, a[i] + b[i])                                              \
	BINARY(sub##S, T, a[i] - b[i])                                              \
	BINARY(mul##S, T, a[i] * b[i])                                              \
	BINARY(div##S, T, a[i] / b[i])                                              \
	BINARY(maximum##S, T, a[i] > b[i] ? a[i] : b[i])                            \
	BINARY(minimum##S, T, a[i] < b[i] ? a[i] : b[i])                            \
	UNARY(addScalar##S, T, a[i] + (T)1.5)                                       \
	UNARY(scale##S, T, a[i] * (T)1.5)                                           \
	UNARY(abs##S, T, a[i] < 0 ? -a[i] : a[i])                                   \
	UNARY(neg##S, T, -a[i])                                                     \
	UNARY(relu##S, T, a[i] > 0 ? a[i] : 0)                                      \
	static NOINLINE void axpy##S(T *restrict y, const T *restrict x, long n) {  \
		for (long i = 0; i < n; i++) y[i] += (T)1e-7 * x[i];                     \
	}                                                                           \
	REDUCE(sum##S, T, 0, s + a[i])                                              \
	REDUCE(dot##S, T, 0, s + a[i] * b[i])                                       \
	REDUCE(sumAbs##S, T, 0, s + (a[i] < 0 ? -a[i] : a[i]))                      \
	REDUCE(max##S, T, a[0], a[i] > s ? a[i] : s)                                \
	REDUCE(min##S, T, a[0], a[i] < s ? a[i] : s)                                \
	REDUCE(sumSquares##S, T, 0, s + a[i] * a[i])

FAMILY(float, 32)
FAMILY(double, 64)

UNARY(sqrt32, float, sqrtf(a[i]))
UNARY(sqrt64, double, sqrt(a[i]))
UNARY(exp32, float, expf(a[i]))
UNARY(log32, float, logf(a[i]))
UNARY(exp64, double, exp(a[i]))
UNARY(log64, double, log(a[i]))

// The read probes: gcc's vector extensions, so the loop is exactly loads and
// ORs at the width chosen here, whatever gcc's vectorizer would do.
typedef long v8 __attribute__((vector_size(64)));
typedef long v4 __attribute__((vector_size(32)));

static NOINLINE long read64(const v8 *x, long n) {
	v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
	for (long i = 0; i < n; i += 8) {
		a0 |= x[i], a1 |= x[i + 1], a2 |= x[i + 2], a3 |= x[i + 3];
		a4 |= x[i + 4], a5 |= x[i + 5], a6 |= x[i + 6], a7 |= x[i + 7];
	}
	v8 a = (a0 | a1) | (a2 | a3) | (a4 | a5) | (a6 | a7);
	return a[0] | a[1] | a[2] | a[3] | a[4] | a[5] | a[6] | a[7];
}

static NOINLINE long read32(const v4 *x, long n) {
	v4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
	for (long i = 0; i < n; i += 4) a0 |= x[i], a1 |= x[i + 1], a2 |= x[i + 2], a3 |= x[i + 3];
	v4 a = (a0 | a1) | (a2 | a3);
	return a[0] | a[1] | a[2] | a[3];
}

static float *A32, *B32, *D32;
static double *A64, *B64, *D64;
static long N;
static volatile double sink;

// barrier keeps gcc from hoisting a call out of the timing loop.
#define barrier() __asm__ volatile("" ::: "memory")

typedef void (*call)(void);

// The float32 suite has fewer ops than the float64 one: its unused wrappers
// are marked so.
#define UNUSED __attribute__((unused))
#define CALLS(S, T)                                                             \
	static UNUSED void c_add##S(void) { add##S(D##S, A##S, B##S, N); }                 \
	static UNUSED void c_sub##S(void) { sub##S(D##S, A##S, B##S, N); }                 \
	static UNUSED void c_mul##S(void) { mul##S(D##S, A##S, B##S, N); }                 \
	static UNUSED void c_div##S(void) { div##S(D##S, A##S, B##S, N); }                 \
	static UNUSED void c_maximum##S(void) { maximum##S(D##S, A##S, B##S, N); }         \
	static UNUSED void c_minimum##S(void) { minimum##S(D##S, A##S, B##S, N); }         \
	static UNUSED void c_addScalar##S(void) { addScalar##S(D##S, A##S, N); }           \
	static UNUSED void c_scale##S(void) { scale##S(D##S, A##S, N); }                   \
	static UNUSED void c_abs##S(void) { abs##S(D##S, A##S, N); }                       \
	static UNUSED void c_neg##S(void) { neg##S(D##S, A##S, N); }                       \
	static UNUSED void c_relu##S(void) { relu##S(D##S, A##S, N); }                     \
	static UNUSED void c_sqrt##S(void) { sqrt##S(D##S, A##S, N); }                     \
	static UNUSED void c_exp##S(void) { exp##S(D##S, A##S, N); }                       \
	static UNUSED void c_log##S(void) { log##S(D##S, A##S, N); }                       \
	static UNUSED void c_axpy##S(void) { axpy##S(D##S, A##S, N); }                     \
	static UNUSED void c_sum##S(void) { sink = sum##S(A##S, B##S, N); }                \
	static UNUSED void c_dot##S(void) { sink = dot##S(A##S, B##S, N); }                \
	static UNUSED void c_sumAbs##S(void) { sink = sumAbs##S(A##S, B##S, N); }          \
	static UNUSED void c_max##S(void) { sink = max##S(A##S, B##S, N); }                \
	static UNUSED void c_min##S(void) { sink = min##S(A##S, B##S, N); }                \
	static UNUSED void c_norm##S(void) { sink = sqrt(sumSquares##S(A##S, B##S, N)); }

static void c_read64(void) { sink = read64((const v8 *)A64, N / 64); }
static void c_read32(void) { sink = read32((const v4 *)A64, N / 32); }

CALLS(32, float)
CALLS(64, double)

static const struct {
	const char *name;
	call f;
} ops[] = {
	{"Add", c_add32}, {"Mul", c_mul32}, {"Div", c_div32}, {"Maximum", c_maximum32},
	{"Scale", c_scale32}, {"Sqrt", c_sqrt32}, {"Axpy", c_axpy32}, {"Sum", c_sum32},
	{"Dot", c_dot32}, {"Max", c_max32}, {"SumAbs", c_sumAbs32}, {"Norm", c_norm32},
	{"Exp", c_exp32}, {"Log", c_log32},
	{"AddF64", c_add64}, {"SubF64", c_sub64}, {"MulF64", c_mul64}, {"DivF64", c_div64},
	{"MaximumF64", c_maximum64}, {"MinimumF64", c_minimum64},
	{"AddScalarF64", c_addScalar64}, {"ScaleF64", c_scale64}, {"AbsF64", c_abs64},
	{"NegF64", c_neg64}, {"SqrtF64", c_sqrt64}, {"ReLUF64", c_relu64},
	{"AxpyF64", c_axpy64}, {"SumF64", c_sum64}, {"DotF64", c_dot64},
	{"SumAbsF64", c_sumAbs64}, {"MaxF64", c_max64}, {"MinF64", c_min64},
	{"NormF64", c_norm64}, {"ExpF64", c_exp64}, {"LogF64", c_log64},
};

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static double timeCalls(call f, long count) {
	double start = now();
	for (long i = 0; i < count; i++) {
		f();
		barrier();
	}
	return now() - start;
}

static int cmp(const void *x, const void *y) {
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static void *alloc(long bytes) {
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
	if (!p) {
		fprintf(stderr, "gccloops: out of memory\n");
		exit(1);
	}
	return p;
}

static double measure(call f, double round, int rounds);
static long calibrate(call f, double round);
static int serveRounds(call f, double round);

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "-list") == 0) {
		for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) printf("%s\n", ops[i].name);
		return 0;
	}
	int serve = argc == 5 && strcmp(argv[1], "-serve") == 0;
	if (serve) argv++; // OP N ROUND_NS, and rounds on demand
	else if (argc != 5) {
		fprintf(stderr, "usage: gccloops OP N ROUND_NS ROUNDS | -serve OP N ROUND_NS\n");
		return 1;
	}
	call f = 0;
	int probe = strcmp(argv[1], "Read") == 0;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(ops[i].name, argv[1]) == 0) f = ops[i].f;
	if (!f && !probe) return 2;
	N = atol(argv[2]);
	double round = atof(argv[3]);
	int rounds = serve ? 1 : atoi(argv[4]);
	if (N <= 0 || rounds <= 0 || (probe && N % 512 != 0) || (probe && serve)) {
		fprintf(stderr, "gccloops: bad N or ROUNDS\n");
		return 1;
	}
	if (probe) { // N bytes of A64
		N /= 8;
		A64 = alloc(N * 8);
		for (long i = 0; i < N; i++) A64[i] = 1;
		N *= 8;
		double t64 = measure(c_read64, round, rounds), t32 = measure(c_read32, round, rounds);
		printf("%.3f\n", t64 < t32 ? t64 : t32);
		return 0;
	}
	A32 = alloc(N * 4), B32 = alloc(N * 4), D32 = alloc(N * 4);
	A64 = alloc(N * 8), B64 = alloc(N * 8), D64 = alloc(N * 8);
	uint64_t s = 0x9e3779b97f4a7c15u;
	for (long i = 0; i < N; i++) {
		s = s * 6364136223846793005u + 1442695040888963407u;
		A64[i] = 0.5 + (double)(s >> 11) * 0x1p-53;
		s = s * 6364136223846793005u + 1442695040888963407u;
		B64[i] = 0.5 + (double)(s >> 11) * 0x1p-53;
		A32[i] = (float)A64[i], B32[i] = (float)B64[i];
		D32[i] = 0, D64[i] = 0;
	}
	if (serve) return serveRounds(f, round);
	printf("%.3f\n", measure(f, round, rounds));
	return 0;
}

// serveRounds answers each line of stdin with one round of f (after one
// untimed call), in ns per call; see -serve.
static int serveRounds(call f, double round) {
	long count = calibrate(f, round);
	char line[64];
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		f();
		barrier();
		printf("%.3f\n", timeCalls(f, count) / count);
		fflush(stdout);
	}
	return 0;
}

// calibrate warms f up and returns the call count that takes about round ns.
static long calibrate(call f, double round) {
	f(); // warm caches and page in the arrays
	long count = 1;
	for (;;) {
		double el = timeCalls(f, count);
		if (el >= round / 5 || count >= 1L << 30) {
			if (el > 0) count = (long)(count * round / el);
			return count < 1 ? 1 : count;
		}
		count *= 4;
	}
}

// measure returns the median of rounds rounds of about round ns each.
static double measure(call f, double round, int rounds) {
	long count = calibrate(f, round);
	double *per = malloc(rounds * sizeof *per);
	for (int r = 0; r < rounds; r++) per[r] = timeCalls(f, count) / count;
	qsort(per, rounds, sizeof *per, cmp);
	double med = per[rounds / 2];
	free(per);
	return med;
}
