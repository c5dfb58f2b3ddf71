//go:build cuda

// runtime.c: the CUDA runtime calls of the Go files (runtime.h).
#include <string.h>
#include <cuda_runtime_api.h>

#include "runtime.h"

int lanes_device_count(int *n) { return cudaGetDeviceCount(n); }
int lanes_set_device(int d) { return cudaSetDevice(d); }
int lanes_props(int d, char *name, size_t len, size_t *mem, int *major, int *minor, int *sms, int *clock_khz) {
	struct cudaDeviceProp p;
	int e = cudaGetDeviceProperties(&p, d);
	if (e) return e;
	strncpy(name, p.name, len - 1);
	name[len - 1] = 0;
	*mem = p.totalGlobalMem;
	*major = p.major;
	*minor = p.minor;
	*sms = p.multiProcessorCount;
	return cudaDeviceGetAttribute(clock_khz, cudaDevAttrClockRate, d);
}
const char *lanes_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
int lanes_stream_create(lanes_stream *s) { return cudaStreamCreateWithFlags((cudaStream_t *)s, cudaStreamNonBlocking); }
int lanes_stream_destroy(lanes_stream s) { return cudaStreamDestroy((cudaStream_t)s); }
int lanes_stream_sync(lanes_stream s) { return cudaStreamSynchronize((cudaStream_t)s); }
int lanes_copy_stream_create(lanes_stream *s) { return lanes_stream_create(s); }
int lanes_event_create(lanes_event *e) { return cudaEventCreateWithFlags((cudaEvent_t *)e, cudaEventDisableTiming); }
int lanes_event_destroy(lanes_event e) { return cudaEventDestroy((cudaEvent_t)e); }
int lanes_event_record(lanes_event e, lanes_stream s) { return cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s); }
int lanes_event_sync(lanes_event e) { return cudaEventSynchronize((cudaEvent_t)e); }
int lanes_stream_wait_event(lanes_stream s, lanes_event e) { return cudaStreamWaitEvent((cudaStream_t)s, (cudaEvent_t)e, 0); }
int lanes_malloc(uintptr_t *p, size_t n) {
	void *q = 0;
	int e = cudaMalloc(&q, n);
	*p = (uintptr_t)q;
	return e;
}
int lanes_free(uintptr_t p) { return cudaFree((void *)p); }
int lanes_host_alloc(void **p, size_t n) { return cudaHostAlloc(p, n, cudaHostAllocDefault); }
int lanes_host_free(void *p) { return cudaFreeHost(p); }
int lanes_memset(uintptr_t p, size_t n, lanes_stream s) { return cudaMemsetAsync((void *)p, 0, n, (cudaStream_t)s); }
int lanes_h2d(uintptr_t dst, const void *src, size_t n, lanes_stream s) {
	return cudaMemcpyAsync((void *)dst, src, n, cudaMemcpyHostToDevice, (cudaStream_t)s);
}
int lanes_d2h(void *dst, uintptr_t src, size_t n, lanes_stream s) {
	return cudaMemcpyAsync(dst, (const void *)src, n, cudaMemcpyDeviceToHost, (cudaStream_t)s);
}
int lanes_stream_begin_capture(lanes_stream s) {
	return cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeGlobal);
}
int lanes_stream_end_capture(lanes_stream s, lanes_graph *g) { return cudaStreamEndCapture((cudaStream_t)s, (cudaGraph_t *)g); }
int lanes_graph_instantiate(lanes_graph_exec *e, lanes_graph g) {
	return cudaGraphInstantiateWithFlags((cudaGraphExec_t *)e, (cudaGraph_t)g, 0);
}
int lanes_graph_launch(lanes_graph_exec e, lanes_stream s) { return cudaGraphLaunch((cudaGraphExec_t)e, (cudaStream_t)s); }
int lanes_graph_exec_destroy(lanes_graph_exec e) { return cudaGraphExecDestroy((cudaGraphExec_t)e); }
int lanes_graph_destroy(lanes_graph g) { return cudaGraphDestroy((cudaGraph_t)g); }
