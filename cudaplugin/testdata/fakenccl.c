// fakenccl.c: a stand-in for libnccl.so.2 for cudaplugin's tests on the
// emulated device (-tags cudaemu), whose "device" pointers are host
// memory. It implements the NCCL functions cudaplugin loads, for ranks
// that are threads of one process (dist's in-process group): a
// communicator is the ranks that passed the same unique id, and every
// collective is two barriers around plain loops; the all-reduce adds in
// rank order, as package dist does. The stream argument is ignored (the
// emulated device runs its work in call order). FAKE_NCCL_VERSION sets
// the version code ncclGetVersion returns (default 21803, 2.18.3).
//
// Built by the tests: cc -shared -fPIC -pthread -o libnccl.so.2 fakenccl.c
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;

enum { ncclSuccess = 0, ncclInvalidArgument = 4, ncclFloat32 = 7, ncclSum = 0, ncclAvg = 4 };

typedef struct group {
	ncclUniqueId id;
	int nranks, joined;
	pthread_barrier_t barrier;
	const void *send[64];
	void *recv[64];
	struct group *next;
} group;

typedef struct { group *g; int rank; } comm;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static group *groups;
static uint64_t ids;

int ncclGetVersion(int *v) {
	const char *s = getenv("FAKE_NCCL_VERSION");
	*v = s ? atoi(s) : 21803;
	return ncclSuccess;
}

const char *ncclGetErrorString(int e) {
	return e == ncclInvalidArgument ? "invalid argument (fake NCCL)" : "error (fake NCCL)";
}

int ncclGetUniqueId(ncclUniqueId *id) {
	pthread_mutex_lock(&mu);
	uint64_t n = ++ids;
	pthread_mutex_unlock(&mu);
	memset(id, 0, sizeof *id);
	memcpy(id->internal, "fakenccl", 8);
	memcpy(id->internal + 8, &n, sizeof n);
	id->internal[127] = (char)0xA5; // every byte travels
	return ncclSuccess;
}

int ncclCommInitRank(comm **out, int nranks, ncclUniqueId id, int rank) {
	if (nranks < 1 || nranks > 64 || rank < 0 || rank >= nranks || memcmp(id.internal, "fakenccl", 8) != 0 ||
	    (unsigned char)id.internal[127] != 0xA5) {
		return ncclInvalidArgument;
	}
	pthread_mutex_lock(&mu);
	group *g = groups;
	while (g != NULL && memcmp(&g->id, &id, sizeof id) != 0) {
		g = g->next;
	}
	if (g == NULL) {
		g = calloc(1, sizeof *g);
		g->id = id;
		g->nranks = nranks;
		pthread_barrier_init(&g->barrier, NULL, nranks);
		g->next = groups;
		groups = g;
	}
	g->joined++;
	pthread_mutex_unlock(&mu);
	if (g->nranks != nranks) {
		return ncclInvalidArgument;
	}
	comm *c = calloc(1, sizeof *c);
	c->g = g;
	c->rank = rank;
	*out = c;
	pthread_barrier_wait(&g->barrier);
	return ncclSuccess;
}

int ncclAllReduce(const void *send, void *recv, size_t n, int dtype, int op, comm *c, void *stream) {
	(void)stream;
	if (dtype != ncclFloat32 || (op != ncclSum && op != ncclAvg)) {
		return ncclInvalidArgument;
	}
	group *g = c->g;
	g->send[c->rank] = send;
	pthread_barrier_wait(&g->barrier);
	float *sum = malloc(n * sizeof(float) + 1);
	for (size_t i = 0; i < n; i++) {
		float s = ((const float *)g->send[0])[i];
		for (int r = 1; r < g->nranks; r++) {
			s += ((const float *)g->send[r])[i];
		}
		sum[i] = op == ncclAvg ? s / (float)g->nranks : s;
	}
	pthread_barrier_wait(&g->barrier); // every rank has read every send
	memcpy(recv, sum, n * sizeof(float));
	free(sum);
	pthread_barrier_wait(&g->barrier);
	return ncclSuccess;
}

int ncclBroadcast(const void *send, void *recv, size_t n, int dtype, int root, comm *c, void *stream) {
	(void)stream;
	if (dtype != ncclFloat32 || root < 0 || root >= c->g->nranks) {
		return ncclInvalidArgument;
	}
	group *g = c->g;
	g->send[c->rank] = send;
	pthread_barrier_wait(&g->barrier);
	if (c->rank != root) {
		memcpy(recv, g->send[root], n * sizeof(float));
	}
	pthread_barrier_wait(&g->barrier);
	return ncclSuccess;
}

int ncclAllGather(const void *send, void *recv, size_t n, int dtype, comm *c, void *stream) {
	(void)stream;
	if (dtype != ncclFloat32) {
		return ncclInvalidArgument;
	}
	group *g = c->g;
	g->send[c->rank] = send;
	pthread_barrier_wait(&g->barrier);
	for (int r = 0; r < g->nranks; r++) {
		memcpy((float *)recv + (size_t)r * n, g->send[r], n * sizeof(float));
	}
	pthread_barrier_wait(&g->barrier);
	return ncclSuccess;
}

int ncclCommDestroy(comm *c) {
	free(c);
	return ncclSuccess;
}
