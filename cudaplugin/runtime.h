// runtime.h: the CUDA runtime calls of cudaplugin's Go files, made in
// runtime.c (-tags cuda), or answered on the host by runtime_emulate.cc
// (-tags cudaemu). Each returns the cudaError_t as an int; device pointers
// cross into Go as uintptr_t, never as Go pointers, and no function-like
// macro (cudaGetDeviceProperties is one in CUDA 12) is called from Go.
#ifndef LANES_RUNTIME_H
#define LANES_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// lanes_stream is a cudaStream_t, lanes_event a cudaEvent_t.
typedef void *lanes_stream;
typedef void *lanes_event;

int lanes_device_count(int *n);
int lanes_set_device(int d);
int lanes_props(int d, char *name, size_t len, size_t *mem, int *major, int *minor, int *sms, int *clock_khz);
const char *lanes_error_string(int e);
int lanes_stream_create(lanes_stream *s);
int lanes_stream_destroy(lanes_stream s);
int lanes_stream_sync(lanes_stream s);
// lanes_copy_stream_create makes a stream for copies only (uploads
// through pinned staging buffers): on a GPU a stream like the others,
// in the emulation one whose work runs on a thread of its own, so that
// its copies really overlap the other streams' work.
int lanes_copy_stream_create(lanes_stream *s);
int lanes_event_create(lanes_event *e);
int lanes_event_destroy(lanes_event e);
int lanes_event_record(lanes_event e, lanes_stream s);
int lanes_event_sync(lanes_event e);
int lanes_stream_wait_event(lanes_stream s, lanes_event e);
int lanes_malloc(uintptr_t *p, size_t n);
int lanes_free(uintptr_t p);
int lanes_host_alloc(void **p, size_t n);
int lanes_host_free(void *p);
int lanes_memset(uintptr_t p, size_t n, lanes_stream s);
int lanes_h2d(uintptr_t dst, const void *src, size_t n, lanes_stream s);
int lanes_d2h(void *dst, uintptr_t src, size_t n, lanes_stream s);

// CUDA graphs (graph.go): lanes_graph is a cudaGraph_t, lanes_graph_exec
// a cudaGraphExec_t. The capture is in cudaStreamCaptureModeGlobal: a
// cudaMalloc, a cudaFree or a synchronization of the capturing stream
// while it captures fails with cudaErrorStreamCaptureUnsupported and
// invalidates the capture (cudaStreamEndCapture then fails too).
typedef void *lanes_graph;
typedef void *lanes_graph_exec;
int lanes_stream_begin_capture(lanes_stream s);
int lanes_stream_end_capture(lanes_stream s, lanes_graph *g);
int lanes_graph_instantiate(lanes_graph_exec *e, lanes_graph g);
int lanes_graph_launch(lanes_graph_exec e, lanes_stream s);
int lanes_graph_exec_destroy(lanes_graph_exec e);
int lanes_graph_destroy(lanes_graph g);

#ifdef __cplusplus
}
#endif

#endif
