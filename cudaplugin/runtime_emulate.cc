//go:build cudaemu

// runtime_emulate.cc: the emulated device of -tags cudaemu answers
// runtime.h's calls on the host, as the CUDA runtime would for a device
// whose memory is host memory:
//
//   - LANES_CUDAEMU_DEVICES devices (default 1; 0: cudaGetDeviceCount's
//     "no CUDA-capable device is detected"), all the same: named "lanes
//     emulated device (host)", compute capability 8.0 (the oldest the
//     kernels are built for), 8 multiprocessors (a fixed count, so that
//     the plans, split-K included, do not depend on the machine), 1 GHz,
//     LANES_CUDAEMU_MEMORY bytes of memory (default 4 GiB; suffixes k, m,
//     g for powers of 1024), shared by the devices.
//   - Device memory is allocated from the C++ heap, 256-byte aligned, and
//     filled with NaNs (0xff bytes), as uninitialised device memory holds
//     anything; beyond the capacity an allocation fails with "out of
//     memory". Frees, memsets and copies check that the device range lies
//     in one allocation ("invalid argument" otherwise).
//   - Streams made by lanes_stream_create are tokens: a launch
//     (emulate.h) runs to completion before it returns, copies and
//     memsets are synchronous, and each holds the device's one queue
//     (emu::queue) while it runs, so work is in one stream's order and a
//     synchronization has nothing to wait for.
//   - A copy stream (lanes_copy_stream_create) is asynchronous, as a GPU's
//     copy engine: its copies, memsets, event records and event waits are
//     queued and run in order on a thread of its own, without the
//     device's queue, so they overlap the launches; each copy starts
//     LANES_CUDAEMU_COPY_DELAY microseconds late (default 0; tests widen
//     the window in which a missing wait shows). Its synchronization waits
//     for its queue.
//   - Events count their records; an event completes a record when the
//     work queued before it on its stream is done (at once on a token
//     stream). cudaEventSynchronize waits for the last record; a copy
//     stream waiting on an event queues the wait; a token stream waiting
//     on one blocks the caller until the record completes, so that the
//     launches queued after it, which run at once, follow it (a GPU
//     would not block the host: the order is the same).
//   - Graphs: lanes_stream_begin_capture makes a token stream record
//     what is queued on it (launches, each a closure over its
//     arguments, and memsets: emu::Recording) instead of running it;
//     lanes_stream_end_capture makes the recording a graph, and
//     lanes_graph_launch replays it in order, each launch as a launch.
//     While a stream captures (cudaStreamCaptureModeGlobal), a
//     cudaMalloc or cudaFree, a synchronization of the capturing stream,
//     a copy to or from host memory or an event on it fails with
//     cudaErrorStreamCaptureUnsupported and invalidates the capture, as
//     on a GPU (the plugin's copies are from Go memory, which a graph
//     cannot hold, and an event waited on would come from outside the
//     capture). lanes_emulate_counts counts the work the host issued
//     (launches, memsets, copies, synchronizations, graph launches; not
//     what a graph replays), which the tests of graph mode read.
//   - Error texts are CUDA 11.8's cudaGetErrorString.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "emulate.h"
#include "runtime.h"

namespace {

enum : int {
    errInvalidValue = 1,
    errMemoryAllocation = 2,
    errNoDevice = 100,
    errInvalidDevice = 101,
    errInvalidHandle = 400,
    errCaptureUnsupported = 900,
    errCaptureInvalidated = 901,
    errCaptureUnmatched = 903,
};

// refuse fails a call not allowed while a stream captures: it invalidates
// r's capture and returns cudaErrorStreamCaptureUnsupported.
int refuse(emu::Recording *r) {
    r->failed = true;
    return errCaptureUnsupported;
}

// Graph is a cudaGraph_t or a cudaGraphExec_t: the recorded work.
struct Graph {
    std::vector<std::function<void()>> work;
};

// envSize reads a size from the environment: digits, then an optional
// k, m or g (powers of 1024); def when unset or malformed.
long long envSize(const char *name, long long def) {
    const char *s = std::getenv(name);
    if (s == nullptr || *s == 0) {
        return def;
    }
    char *end = nullptr;
    long long v = std::strtoll(s, &end, 10);
    if (end == s || v < 0) {
        return def;
    }
    switch (*end) {
    case 0:
        return v;
    case 'k':
    case 'K':
        return v << 10;
    case 'm':
    case 'M':
        return v << 20;
    case 'g':
    case 'G':
        return v << 30;
    }
    return def;
}

struct Device {
    std::mutex mu;
    int devices = (int)envSize("LANES_CUDAEMU_DEVICES", 1);
    long long capacity = envSize("LANES_CUDAEMU_MEMORY", 4LL << 30);
    long long used = 0;
    std::map<uintptr_t, size_t> buffers; // device buffers: start and size
    int streams = 0, pinned = 0;

    // inside reports whether [p, p+n) lies in one device buffer.
    bool inside(uintptr_t p, size_t n) {
        std::lock_guard<std::mutex> l(mu);
        auto it = buffers.upper_bound(p);
        if (it == buffers.begin()) {
            return false;
        }
        --it;
        return p - it->first <= it->second && n <= it->second - (p - it->first);
    }
};

Device &device() {
    static Device *d = new Device(); // never destroyed: Go may call after static destructors
    return *d;
}

struct ErrorText {
    int code;
    const char *text;
};

constexpr ErrorText errorTexts[] = {
    {0, "no error"},
    {1, "invalid argument"},
    {2, "out of memory"},
    {3, "initialization error"},
    {34, "CUDA driver is a stub library"},
    {35, "CUDA driver version is insufficient for CUDA runtime version"},
    {100, "no CUDA-capable device is detected"},
    {101, "invalid device ordinal"},
    {214, "uncorrectable ECC error encountered"},
    {220, "uncorrectable NVLink error detected during the execution"},
    {400, "invalid resource handle"},
    {700, "an illegal memory access was encountered"},
    {702, "the launch timed out and was terminated"},
    {709, "context is destroyed"},
    {710, "device-side assert triggered"},
    {714, "hardware stack error"},
    {715, "an illegal instruction was encountered"},
    {716, "misaligned address"},
    {717, "operation not supported on global/shared address space"},
    {718, "invalid program counter"},
    {719, "unspecified launch failure"},
    {802, "system not yet initialized"},
    {900, "operation not permitted when stream is capturing"},
    {901, "operation failed due to a previous error during capture"},
    {903, "capture was not initiated in this stream"},
    {999, "unknown error"},
};

// Event is a cudaEvent_t: records made and records completed.
struct Event {
    std::mutex mu;
    std::condition_variable cv;
    unsigned long long recorded = 0, completed = 0;

    void complete(unsigned long long n) {
        std::lock_guard<std::mutex> l(mu);
        completed = std::max(completed, n);
        cv.notify_all();
    }
    void wait(unsigned long long n) {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return completed >= n; });
    }
    unsigned long long last() {
        std::lock_guard<std::mutex> l(mu);
        return recorded;
    }
};

// Stream is a cudaStream_t: a token, or a copy stream with its thread.
struct Stream {
    bool async = false;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> work;
    unsigned long long queued = 0, done = 0;
    bool stop = false;
    std::thread thread;

    void start() {
        async = true;
        thread = std::thread([this] {
            for (;;) {
                std::unique_lock<std::mutex> l(mu);
                cv.wait(l, [&] { return stop || !work.empty(); });
                if (work.empty()) {
                    return; // stop, and nothing left
                }
                std::function<void()> f = std::move(work.front());
                work.pop_front();
                l.unlock();
                f();
                l.lock();
                done++;
                cv.notify_all();
            }
        });
    }
    void push(std::function<void()> f) {
        std::lock_guard<std::mutex> l(mu);
        work.push_back(std::move(f));
        queued++;
        cv.notify_all();
    }
    void sync() {
        std::unique_lock<std::mutex> l(mu);
        const unsigned long long n = queued;
        cv.wait(l, [&] { return done >= n; });
    }
    void finish() {
        if (!async) {
            return;
        }
        {
            std::lock_guard<std::mutex> l(mu);
            stop = true;
            cv.notify_all();
        }
        thread.join();
    }
};

// copyDelay sleeps LANES_CUDAEMU_COPY_DELAY microseconds.
void copyDelay() {
    if (const char *s = std::getenv("LANES_CUDAEMU_COPY_DELAY")) {
        if (long us = std::atol(s); us > 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(us));
        }
    }
}

// asyncStream returns s as a copy stream, or nullptr for a token.
Stream *asyncStream(lanes_stream s) {
    Stream *st = static_cast<Stream *>(s);
    return st != nullptr && st->async ? st : nullptr;
}

} // namespace

extern "C" {

int lanes_device_count(int *n) {
    *n = device().devices;
    return *n > 0 ? 0 : errNoDevice;
}

int lanes_set_device(int d) {
    if (d < 0 || d >= device().devices) {
        return device().devices > 0 ? errInvalidDevice : errNoDevice;
    }
    return 0;
}

int lanes_props(int d, char *name, size_t len, size_t *mem, int *major, int *minor, int *sms, int *clock_khz) {
    if (d < 0 || d >= device().devices) {
        return device().devices > 0 ? errInvalidDevice : errNoDevice;
    }
    std::strncpy(name, "lanes emulated device (host)", len - 1);
    name[len - 1] = 0;
    *mem = (size_t)device().capacity;
    *major = 8;
    *minor = 0;
    *sms = 8;
    *clock_khz = 1000000;
    return 0;
}

const char *lanes_error_string(int e) {
    for (const ErrorText &t : errorTexts) {
        if (t.code == e) {
            return t.text;
        }
    }
    return "unrecognized error code";
}

int lanes_stream_create(lanes_stream *s) {
    Device &d = device();
    std::lock_guard<std::mutex> l(d.mu);
    *s = new Stream();
    d.streams++;
    return 0;
}

int lanes_copy_stream_create(lanes_stream *s) {
    Stream *st = new Stream();
    st->start();
    Device &d = device();
    std::lock_guard<std::mutex> l(d.mu);
    *s = st;
    d.streams++;
    return 0;
}

int lanes_stream_destroy(lanes_stream s) {
    if (s == nullptr) {
        return errInvalidHandle;
    }
    Stream *st = static_cast<Stream *>(s);
    st->finish(); // its queued work runs first, as cudaStreamDestroy lets it
    delete st;
    Device &d = device();
    std::lock_guard<std::mutex> l(d.mu);
    d.streams--;
    return 0;
}

int lanes_stream_sync(lanes_stream s) {
    if (emu::Recording *r = emu::Captures::get().of(s)) {
        return refuse(r);
    }
    emu::Captures::get().syncs++;
    if (Stream *st = asyncStream(s)) {
        st->sync();
    }
    return 0;
}

int lanes_event_create(lanes_event *e) {
    *e = new Event();
    return 0;
}

int lanes_event_destroy(lanes_event e) {
    if (e == nullptr) {
        return errInvalidHandle;
    }
    Event *ev = static_cast<Event *>(e);
    ev->wait(ev->last()); // the queued work that completes it refers to it
    delete ev;
    return 0;
}

int lanes_event_record(lanes_event e, lanes_stream s) {
    if (e == nullptr) {
        return errInvalidHandle;
    }
    if (emu::Recording *r = emu::Captures::get().of(s)) {
        return refuse(r);
    }
    Event *ev = static_cast<Event *>(e);
    unsigned long long n;
    {
        std::lock_guard<std::mutex> l(ev->mu);
        n = ++ev->recorded;
    }
    if (Stream *st = asyncStream(s)) {
        st->push([ev, n] { ev->complete(n); });
    } else {
        ev->complete(n);
    }
    return 0;
}

int lanes_event_sync(lanes_event e) {
    if (e == nullptr) {
        return errInvalidHandle;
    }
    Event *ev = static_cast<Event *>(e);
    ev->wait(ev->last());
    return 0;
}

int lanes_stream_wait_event(lanes_stream s, lanes_event e) {
    if (e == nullptr) {
        return errInvalidHandle;
    }
    if (emu::Recording *r = emu::Captures::get().of(s)) {
        return refuse(r);
    }
    Event *ev = static_cast<Event *>(e);
    const unsigned long long n = ev->last();
    if (Stream *st = asyncStream(s)) {
        st->push([ev, n] { ev->wait(n); });
    } else {
        ev->wait(n);
    }
    return 0;
}

int lanes_malloc(uintptr_t *p, size_t n) {
    *p = 0;
    if (emu::Recording *r = emu::Captures::get().any()) {
        return refuse(r);
    }
    Device &d = device();
    const size_t size = (n + 255) / 256 * 256;
    {
        std::lock_guard<std::mutex> l(d.mu);
        if ((long long)size > d.capacity - d.used) {
            return errMemoryAllocation;
        }
        d.used += (long long)size;
    }
    void *q = std::aligned_alloc(256, size > 0 ? size : 256);
    if (q == nullptr) {
        std::lock_guard<std::mutex> l(d.mu);
        d.used -= (long long)size;
        return errMemoryAllocation;
    }
    std::memset(q, 0xff, size);
    std::lock_guard<std::mutex> l(d.mu);
    d.buffers[(uintptr_t)q] = size;
    *p = (uintptr_t)q;
    return 0;
}

int lanes_free(uintptr_t p) {
    if (p == 0) {
        return 0;
    }
    if (emu::Recording *r = emu::Captures::get().any()) {
        return refuse(r);
    }
    Device &d = device();
    {
        std::lock_guard<std::mutex> l(d.mu);
        auto it = d.buffers.find(p);
        if (it == d.buffers.end()) {
            return errInvalidValue;
        }
        d.used -= (long long)it->second;
        d.buffers.erase(it);
    }
    std::free((void *)p);
    return 0;
}

int lanes_host_alloc(void **p, size_t n) {
    *p = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (*p == nullptr) {
        return errMemoryAllocation;
    }
    Device &d = device();
    std::lock_guard<std::mutex> l(d.mu);
    d.pinned++;
    return 0;
}

int lanes_host_free(void *p) {
    if (p == nullptr) {
        return 0;
    }
    std::free(p);
    Device &d = device();
    std::lock_guard<std::mutex> l(d.mu);
    d.pinned--;
    return 0;
}

int lanes_memset(uintptr_t p, size_t n, lanes_stream s) {
    if (!device().inside(p, n)) {
        return errInvalidValue;
    }
    if (Stream *st = asyncStream(s)) {
        st->push([p, n] { std::memset((void *)p, 0, n); });
        return 0;
    }
    auto set = [p, n] {
        std::lock_guard<std::mutex> q(emu::queue());
        std::memset((void *)p, 0, n);
    };
    if (emu::Recording *r = emu::Captures::get().of(s)) {
        r->work.push_back(set);
        return 0;
    }
    emu::Captures::get().memsets++;
    set();
    return 0;
}

int lanes_h2d(uintptr_t dst, const void *src, size_t n, lanes_stream s) {
    if (emu::Recording *r = emu::Captures::get().of(s)) {
        return refuse(r);
    }
    if (!device().inside(dst, n)) {
        return errInvalidValue;
    }
    emu::Captures::get().copies++;
    if (Stream *st = asyncStream(s)) {
        st->push([dst, src, n] {
            copyDelay();
            std::memcpy((void *)dst, src, n);
        });
        return 0;
    }
    std::lock_guard<std::mutex> q(emu::queue());
    std::memcpy((void *)dst, src, n);
    return 0;
}

int lanes_d2h(void *dst, uintptr_t src, size_t n, lanes_stream s) {
    if (emu::Recording *r = emu::Captures::get().of(s)) {
        return refuse(r);
    }
    if (!device().inside(src, n)) {
        return errInvalidValue;
    }
    emu::Captures::get().copies++;
    if (Stream *st = asyncStream(s)) {
        st->push([dst, src, n] {
            copyDelay();
            std::memcpy(dst, (const void *)src, n);
        });
        return 0;
    }
    std::lock_guard<std::mutex> q(emu::queue());
    std::memcpy(dst, (const void *)src, n);
    return 0;
}

int lanes_stream_begin_capture(lanes_stream s) {
    if (s == nullptr || asyncStream(s) != nullptr) {
        return errInvalidValue; // the copy stream's work is not captured
    }
    emu::Captures &c = emu::Captures::get();
    std::lock_guard<std::mutex> l(c.mu);
    for (auto &e : c.streams) {
        if (e.first == s) {
            return errCaptureUnsupported; // already capturing
        }
    }
    c.streams.emplace_back(s, new emu::Recording());
    return 0;
}

int lanes_stream_end_capture(lanes_stream s, lanes_graph *g) {
    *g = nullptr;
    emu::Captures &c = emu::Captures::get();
    emu::Recording *r = nullptr;
    {
        std::lock_guard<std::mutex> l(c.mu);
        for (auto it = c.streams.begin(); it != c.streams.end(); ++it) {
            if (it->first == s) {
                r = it->second;
                c.streams.erase(it);
                break;
            }
        }
    }
    if (r == nullptr) {
        return errCaptureUnmatched;
    }
    const bool failed = r->failed;
    if (!failed) {
        *g = new Graph{std::move(r->work)};
    }
    delete r;
    return failed ? errCaptureInvalidated : 0;
}

int lanes_graph_instantiate(lanes_graph_exec *e, lanes_graph g) {
    if (g == nullptr) {
        return errInvalidValue;
    }
    *e = new Graph(*static_cast<Graph *>(g));
    return 0;
}

int lanes_graph_launch(lanes_graph_exec e, lanes_stream s) {
    if (e == nullptr) {
        return errInvalidHandle;
    }
    if (emu::Recording *r = emu::Captures::get().of(s)) {
        return refuse(r);
    }
    emu::Captures::get().graphLaunches++;
    for (const auto &f : static_cast<Graph *>(e)->work) {
        f();
    }
    return 0;
}

int lanes_graph_exec_destroy(lanes_graph_exec e) {
    delete static_cast<Graph *>(e);
    return 0;
}

int lanes_graph_destroy(lanes_graph g) {
    delete static_cast<Graph *>(g);
    return 0;
}

// lanes_emulate_counts reports the work the host issued (emulate.h:
// Captures): kernel launches, memsets, copies, stream synchronizations
// and graph launches.
int lanes_emulate_counts(long long *launches, long long *memsets, long long *copies, long long *syncs, long long *graphs) {
    emu::Captures &c = emu::Captures::get();
    *launches = c.launches;
    *memsets = c.memsets;
    *copies = c.copies;
    *syncs = c.syncs;
    *graphs = c.graphLaunches;
    return 0;
}

// lanes_emulate_live reports what the emulated runtime holds (emulate.go).
int lanes_emulate_live(long long *bytes, int *buffers, int *streams, int *pinned) {
    Device &d = device();
    std::lock_guard<std::mutex> l(d.mu);
    *bytes = d.used;
    *buffers = (int)d.buffers.size();
    *streams = d.streams;
    *pinned = d.pinned;
    return 0;
}

} // extern "C"
