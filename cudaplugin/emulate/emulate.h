// emulate.h: just enough of CUDA to run the kernels (every family's .cu
// file) on the host: for the indexing tests in emulate_test.cc (make
// cuda-emulate) and for the emulated device of -tags cudaemu.
//
// A launch's blocks are shared out among a pool of worker threads, one
// per core (LANES_CUDAEMU_THREADS sets the number), which stay for the
// next launch. A worker runs one block at a time, its CUDA threads as
// fibers on the worker: each has a stack of its own and runs until it
// reaches __syncthreads or returns, then the next one runs; when all have,
// the barrier is passed. A barrier costs one user-space context switch
// per thread, not an OS thread's wake-up. __shared__ variables are
// thread_local statics, so each worker (each block in flight) has its
// own. Launches run one at a time, to completion, and so do the emulated
// runtime's copies (queue): a launch returns when its work is done, and
// the device's work is in one order, as a stream's.
#ifndef LANES_EMULATE_H
#define LANES_EMULATE_H

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <math.h>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#if !defined(__x86_64__) || defined(LANES_EMULATE_UCONTEXT)
#define LANES_EMULATE_UCONTEXT 1
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(n)

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};

struct alignas(16) float4 {
    float x, y, z, w;
};

using std::max;
using std::min;

namespace emu {
// fmaf without a library call: the product of two floats is exact in
// double, so a·b + c is rounded twice (to double, then to float), which
// differs from a fused multiply-add in the last bit only when the double
// lands on a tie between two floats. Built for a CPU with FMA (-mfma,
// -march=...), it is the instruction.
inline float fmaf(float a, float b, float c) {
#ifdef __FMA__
    return __builtin_fmaf(a, b, c);
#else
    return (float)((double)a * (double)b + (double)c);
#endif
}

// The rounding intrinsics, each operation rounded on its own as nvcc
// keeps them (it never contracts one into a fused multiply-add, which
// the CPU's loops they reproduce do not use). A product is stored
// through a volatile, so that a build which may contract (g++'s default
// -ffp-contract=fast, with -mfma or -march=...) cannot fuse it into the
// sum that takes it; a sum alone has nothing to fuse.
inline double dmul_rn(double a, double b) {
    volatile double p = a * b;
    return p;
}
inline float fmul_rn(float a, float b) {
    volatile float p = a * b;
    return p;
}
inline double dadd_rn(double a, double b) { return a + b; }
inline float fadd_rn(float a, float b) { return a + b; }

// float_as_uint is __float_as_uint: v's bits.
inline unsigned int float_as_uint(float v) { return std::bit_cast<unsigned int>(v); }
} // namespace emu
#define fmaf emu::fmaf
#define __dmul_rn emu::dmul_rn
#define __fmul_rn emu::fmul_rn
#define __dadd_rn emu::dadd_rn
#define __fadd_rn emu::fadd_rn
#define __float_as_uint emu::float_as_uint

namespace emu {

// The built-in variables, set by the worker before it runs a fiber or a
// block.
inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

#ifndef LANES_EMULATE_UCONTEXT
// switchStack saves the callee-saved registers on the current stack,
// stores the stack pointer in *from, then loads to and restores the
// registers saved there (System V AMD64: rbx, rbp, r12-r15; the control
// words of MXCSR and x87 are the same in every fiber).
[[gnu::naked, gnu::noinline]] inline void switchStack(void **from, void *to) {
    asm volatile("pushq %rbp\n\t"
                 "pushq %rbx\n\t"
                 "pushq %r12\n\t"
                 "pushq %r13\n\t"
                 "pushq %r14\n\t"
                 "pushq %r15\n\t"
                 "movq %rsp, (%rdi)\n\t"
                 "movq %rsi, %rsp\n\t"
                 "popq %r15\n\t"
                 "popq %r14\n\t"
                 "popq %r13\n\t"
                 "popq %r12\n\t"
                 "popq %rbx\n\t"
                 "popq %rbp\n\t"
                 "ret\n\t");
}
#endif

// Worker is a thread of the pool: it runs blocks, each block's threads as
// fibers.
class Worker {
  public:
    static constexpr size_t STACK = 64 << 10; // per fiber; a guard page below each

    // block runs one block of body's kernel to completion.
    void block(const std::function<void()> &body, dim3 grid, dim3 blk, dim3 idx) {
        gridDim = grid;
        blockDim = blk;
        blockIdx = idx;
        const unsigned n = blk.x * blk.y * blk.z;
        fibers(n);
        body_ = &body;
        for (unsigned t = 0; t < n; t++) {
            start(t);
        }
        unsigned live = n;
        while (live > 0) { // one round: every live thread runs to its next barrier or its end
            for (unsigned t = 0; t < n; t++) {
                if (done_[t]) {
                    continue;
                }
                cur_ = t;
                threadIdx = dim3(t % blk.x, t / blk.x % blk.y, t / (blk.x * blk.y));
                resume(t);
                if (done_[t]) {
                    live--;
                }
            }
        }
        body_ = nullptr;
    }

    // sync suspends the running fiber until the block's other threads
    // reach the barrier (or end).
    void sync() {
#ifdef LANES_EMULATE_UCONTEXT
        swapcontext(&ctx_[cur_], &sched_);
#else
        switchStack(&sp_[cur_], sched_);
#endif
    }

    static inline thread_local Worker *self = nullptr;

  private:
    // fibers makes sure n fibers have stacks.
    void fibers(unsigned n) {
        if (n <= stacks_.size()) {
            return;
        }
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        for (unsigned t = (unsigned)stacks_.size(); t < n; t++) {
            void *m = mmap(nullptr, STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) {
                std::fprintf(stderr, "lanes emulate: no memory for the stack of thread %u of a block\n", t);
                std::abort();
            }
            mprotect(m, page, PROT_NONE); // a stack overflow faults instead of writing over the next stack
            stacks_.push_back(static_cast<char *>(m) + page);
        }
        done_.resize(n);
#ifdef LANES_EMULATE_UCONTEXT
        ctx_.resize(n);
#else
        sp_.resize(n);
#endif
    }

    static void entry() {
        Worker *w = self;
        (*w->body_)();
        w->done_[w->cur_] = true;
        w->sync(); // never resumed
        std::abort();
    }

    void start(unsigned t) {
        done_[t] = false;
        char *top = stacks_[t] + STACK;
#ifdef LANES_EMULATE_UCONTEXT
        getcontext(&ctx_[t]);
        ctx_[t].uc_stack.ss_sp = stacks_[t];
        ctx_[t].uc_stack.ss_size = STACK;
        ctx_[t].uc_link = nullptr;
        makecontext(&ctx_[t], entry, 0);
#else
        // What switchStack pops: six registers, then the address it
        // returns to (entry), above which entry finds the stack aligned
        // as after a call.
        void **sp = reinterpret_cast<void **>(top) - 8;
        for (int i = 0; i < 6; i++) {
            sp[i] = nullptr;
        }
        sp[6] = reinterpret_cast<void *>(&entry);
        sp[7] = nullptr;
        sp_[t] = sp;
        (void)top;
#endif
    }

    void resume(unsigned t) {
#ifdef LANES_EMULATE_UCONTEXT
        swapcontext(&sched_, &ctx_[t]);
#else
        switchStack(&sched_, sp_[t]);
#endif
    }

    const std::function<void()> *body_ = nullptr;
    unsigned cur_ = 0;
    std::vector<char *> stacks_;
    std::vector<char> done_;
#ifdef LANES_EMULATE_UCONTEXT
    ucontext_t sched_;
    std::vector<ucontext_t> ctx_;
#else
    void *sched_ = nullptr;
    std::vector<void *> sp_;
#endif
};

// queue is the emulated device's one work queue: a launch, and the
// emulated runtime's copies and memsets (runtime_emulate.cc), hold it
// while they run, so that they happen one after another, each whole, as
// the work of one stream does on a GPU (work on a buffer that another
// goroutine gave back and took again runs after the copy that read it).
inline std::mutex &queue() {
    static std::mutex m;
    return m;
}

// Pool is the worker threads and the launch they work on.
class Pool {
  public:
    static Pool &get() {
        static Pool *p = new Pool(); // never destroyed: workers may outlive static destructors
        return *p;
    }

    // run runs the grid's blocks on the workers and returns when all are
    // done. One launch at a time (queue).
    void run(dim3 grid, dim3 block, const std::function<void()> &body) {
        const long long blocks = (long long)grid.x * grid.y * grid.z;
        if (blocks == 0 || block.x * block.y * block.z == 0) {
            return;
        }
        std::lock_guard<std::mutex> one(queue());
        std::unique_lock<std::mutex> l(mu_);
        grid_ = grid;
        block_ = block;
        body_ = &body;
        blocks_ = blocks;
        next_.store(0);
        busy_ = (int)workers_.size();
        gen_++;
        wake_.notify_all();
        idle_.wait(l, [&] { return busy_ == 0; });
        body_ = nullptr;
    }

  private:
    Pool() {
        int n = (int)std::thread::hardware_concurrency();
        if (const char *s = std::getenv("LANES_CUDAEMU_THREADS")) {
            n = std::atoi(s);
        }
        n = std::clamp(n, 1, 256);
        for (int i = 0; i < n; i++) {
            workers_.emplace_back([this] { work(); });
            workers_.back().detach();
        }
    }

    void work() {
        // Signals go to other threads: a worker spends its time on fiber
        // stacks, where a handler has little room. The synchronous ones
        // (a fault in a kernel) cannot be redirected; they are handled on
        // an alternate stack.
        sigset_t all;
        sigfillset(&all);
        for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) {
            sigdelset(&all, s);
        }
        pthread_sigmask(SIG_BLOCK, &all, nullptr);
        static constexpr size_t ALT = 256 << 10;
        stack_t ss{};
        ss.ss_sp = std::malloc(ALT);
        ss.ss_size = ALT;
        sigaltstack(&ss, nullptr);

        Worker w;
        Worker::self = &w;
        unsigned long long seen = 0;
        for (;;) {
            std::unique_lock<std::mutex> l(mu_);
            wake_.wait(l, [&] { return gen_ != seen; });
            seen = gen_;
            const dim3 grid = grid_, block = block_;
            const std::function<void()> &body = *body_;
            const long long blocks = blocks_;
            l.unlock();
            for (long long b; (b = next_.fetch_add(1)) < blocks;) {
                const dim3 idx((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y), (unsigned)(b / ((long long)grid.x * grid.y)));
                w.block(body, grid, block, idx);
            }
            l.lock();
            if (--busy_ == 0) {
                idle_.notify_one();
            }
        }
    }

    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable wake_, idle_;
    unsigned long long gen_ = 0;
    int busy_ = 0;
    dim3 grid_, block_;
    const std::function<void()> *body_ = nullptr;
    long long blocks_ = 0;
    std::atomic<long long> next_{0};
};

inline void run(dim3 grid, dim3 block, const std::function<void()> &body) { Pool::get().run(grid, block, body); }

// Recording is a stream capture of the emulated runtime (runtime_emulate.cc:
// lanes_stream_begin_capture): the work queued on the stream while it
// captures, each item a closure over its arguments (copied, as a launch's
// arguments are), replayed in order by lanes_graph_launch. failed says
// that a call not allowed in a capture (a synchronization, a cudaMalloc)
// was made: cudaStreamEndCapture then fails, as on a GPU.
struct Recording {
    std::vector<std::function<void()>> work;
    bool failed = false;
};

// Captures is the emulated runtime's table of capturing streams, and the
// count of work issued by the host (not replayed from a graph): launches,
// memsets, copies, synchronizations and graph launches.
struct Captures {
    std::mutex mu;
    std::vector<std::pair<void *, Recording *>> streams;
    std::atomic<long long> launches{0}, memsets{0}, copies{0}, syncs{0}, graphLaunches{0};

    static Captures &get() {
        static Captures *c = new Captures(); // never destroyed, as Pool
        return *c;
    }
    // of returns the recording of stream s, or nullptr when it does not capture.
    Recording *of(void *s) {
        std::lock_guard<std::mutex> l(mu);
        for (auto &e : streams) {
            if (e.first == s) {
                return e.second;
            }
        }
        return nullptr;
    }
    // any returns a recording in progress (a cudaMalloc or a
    // synchronization of any stream fails it: the capture mode is global).
    Recording *any() {
        std::lock_guard<std::mutex> l(mu);
        return streams.empty() ? nullptr : streams.front().second;
    }
};

// submit runs a launch of body on stream, or records it when the stream
// captures.
inline void submit(void *stream, dim3 grid, dim3 block, std::function<void()> body) {
    if (Recording *r = Captures::get().of(stream)) {
        r->work.push_back([grid, block, body = std::move(body)] { run(grid, block, body); });
        return;
    }
    Captures::get().launches++;
    run(grid, block, body);
}

} // namespace emu

#define threadIdx emu::threadIdx
#define blockIdx emu::blockIdx
#define blockDim emu::blockDim
#define gridDim emu::gridDim
inline void __syncthreads() { emu::Worker::self->sync(); }

// Atomics as CUDA's (the old value returned): blocks run on several
// worker threads at once, so they are std::atomic_ref operations.
inline float atomicAdd(float *p, float v) { return std::atomic_ref<float>(*p).fetch_add(v, std::memory_order_relaxed); }
inline int atomicCAS(int *p, int cmp, int v) {
    std::atomic_ref<int>(*p).compare_exchange_strong(cmp, v, std::memory_order_relaxed);
    return cmp;
}

#endif
