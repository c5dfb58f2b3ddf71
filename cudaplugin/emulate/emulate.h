// emulate.h: just enough of CUDA to run kernels.cu on the host, for the
// indexing tests in emulate_test.cc (make cuda-emulate). Each block's
// threads are host threads; __syncthreads is a barrier; blocks run one at
// a time, so __shared__ variables are function statics.
#ifndef LANES_EMULATE_H
#define LANES_EMULATE_H

#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
#include <math.h>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
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
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<> *barrier;

inline void run(dim3 grid, dim3 block, const std::function<void()> &body) {
    gridDim = grid;
    blockDim = block;
    unsigned threads = block.x * block.y * block.z;
    for (unsigned z = 0; z < grid.z; z++) {
        for (unsigned y = 0; y < grid.y; y++) {
            for (unsigned x = 0; x < grid.x; x++) {
                std::barrier<> b(threads);
                barrier = &b;
                std::vector<std::thread> ts;
                for (unsigned t = 0; t < threads; t++) {
                    ts.emplace_back([&, t] {
                        threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
                        blockIdx = dim3(x, y, z);
                        body();
                    });
                }
                for (auto &t : ts) {
                    t.join();
                }
            }
        }
    }
}
} // namespace emu

#define threadIdx emu::threadIdx
#define blockIdx emu::blockIdx
#define blockDim emu::blockDim
#define gridDim emu::gridDim
inline void __syncthreads() { emu::barrier->arrive_and_wait(); }

#endif
