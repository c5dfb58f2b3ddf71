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
//   - Streams are tokens: a launch (emulate.h) runs to completion before
//     it returns, copies and memsets are synchronous, and each holds the
//     device's one queue (emu::queue) while it runs, so work is in one
//     stream's order and a synchronization has nothing to wait for.
//   - Error texts are CUDA 11.8's cudaGetErrorString.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "emulate.h"
#include "runtime.h"

namespace {

enum : int {
    errInvalidValue = 1,
    errMemoryAllocation = 2,
    errNoDevice = 100,
    errInvalidDevice = 101,
    errInvalidHandle = 400,
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
    {999, "unknown error"},
};

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
    *s = new char(0);
    d.streams++;
    return 0;
}

int lanes_stream_destroy(lanes_stream s) {
    if (s == nullptr) {
        return errInvalidHandle;
    }
    Device &d = device();
    std::lock_guard<std::mutex> l(d.mu);
    delete static_cast<char *>(s);
    d.streams--;
    return 0;
}

int lanes_stream_sync(lanes_stream) { return 0; }

int lanes_malloc(uintptr_t *p, size_t n) {
    *p = 0;
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

int lanes_memset(uintptr_t p, size_t n, lanes_stream) {
    if (!device().inside(p, n)) {
        return errInvalidValue;
    }
    std::lock_guard<std::mutex> q(emu::queue());
    std::memset((void *)p, 0, n);
    return 0;
}

int lanes_h2d(uintptr_t dst, const void *src, size_t n, lanes_stream) {
    if (!device().inside(dst, n)) {
        return errInvalidValue;
    }
    std::lock_guard<std::mutex> q(emu::queue());
    std::memcpy((void *)dst, src, n);
    return 0;
}

int lanes_d2h(void *dst, uintptr_t src, size_t n, lanes_stream) {
    if (!device().inside(src, n)) {
        return errInvalidValue;
    }
    std::lock_guard<std::mutex> q(emu::queue());
    std::memcpy(dst, (const void *)src, n);
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
