# lanes: make demo (the main job), make test (what CI runs), make generate.
GO ?= go

.PHONY: all demo test generate check-generate bench report bench-save bench-compare

all: test

# The main job: the CPU report and the throughput table vs vek, gonum and naive
# Go. bench/ is its own module (it needs the peers), hence -C.
# With Debian's libsleef-dev installed, SLEEF's AVX-512 functions join the
# comparison (cgo, -tags sleef).
SLEEF_TAGS := $(if $(wildcard /usr/include/x86_64-linux-gnu/sleef.h /usr/include/sleef.h),-tags sleef)

demo:
	$(GO) -C bench run $(SLEEF_TAGS) ./cmd/lanes $(ARGS)

# generate rewrites every generated assembly file and stub from asm/gen.
# Generated files are deleted first so a kernel that lost its generator shows up.
generate:
	grep -l -r --include='*.s' --include='*.go' -e '^// Code generated .* DO NOT EDIT\.' simd | xargs -r rm -f
	cd asm/gen && $(GO) generate ./...
	gofmt -w simd

# check-generate fails when the committed assembly differs from what the
# generators write now.
check-generate: generate
	@gen=$$( { git grep -l -e '^// Code generated .* DO NOT EDIT\.' -- simd; \
	           grep -l -r -e '^// Code generated .* DO NOT EDIT\.' simd; } | sort -u); \
	  git diff --exit-code --stat -- $$gen || { echo "generated files differ from the committed ones: run make generate and commit"; exit 1; }; \
	  new=$$(git ls-files --others --exclude-standard -- $$gen); \
	  if [ -n "$$new" ]; then echo "generated files not committed: $$new"; exit 1; fi

test:
	bash .ci/test

# bench runs the simd benchmarks (every function, level and size) and the
# peer comparison in benchstat format.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./simd/
	$(GO) -C bench test $(SLEEF_TAGS) -run '^$$' -bench . ./peers/

# report runs the comparative suite in one process (lanes at every level, vek,
# gonum, naive Go; Sgemm against the measured FMA peak; Conv2D and training
# against the recorded PyTorch figures; CPU vs GPU when an accelerator is
# linked in) and writes report.md, PNG charts and bench.txt (benchstat input)
# into REPORT_DIR, in about three minutes on 2 cores.
REPORT_DIR ?= bench/results/tmp/report

report:
	$(GO) -C bench run $(SLEEF_TAGS) ./cmd/report -o $(abspath $(REPORT_DIR)) $(ARGS)

# The regression guard. bench-save runs the report's suite and keeps every
# sample as the baseline (BENCH_DIR/baseline.txt); bench-compare runs it again
# and compares with benchstat, pinned and fetched through the Go module proxy.
# ARGS narrows both the same way, e.g. ARGS="-ops Add,Exp -gemm 256 -train=false".
BENCH_DIR ?= bench/results/tmp
BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

bench-save:
	$(GO) -C bench run $(SLEEF_TAGS) ./cmd/report -o $(abspath $(BENCH_DIR))/baseline $(ARGS)
	cp $(BENCH_DIR)/baseline/bench.txt $(BENCH_DIR)/baseline.txt
	@echo "baseline: $(BENCH_DIR)/baseline.txt"

bench-compare:
	@test -f $(BENCH_DIR)/baseline.txt || { echo "no baseline: run make bench-save first"; exit 1; }
	$(GO) -C bench run $(SLEEF_TAGS) ./cmd/report -o $(abspath $(BENCH_DIR))/new $(ARGS)
	$(GO) run $(BENCHSTAT) $(BENCH_DIR)/baseline.txt $(BENCH_DIR)/new/bench.txt

# cuda builds cudaplugin's kernels (nvcc: sm_80 and sm_90 code, sm_90 PTX for
# later GPUs) into a static library for the cgo files of -tags cuda, then
# builds everything with the tag. No GPU is needed to build.
# cuda-emulate runs the kernels on the host (emulate.h) against reference loops.
# gpu-check builds bin/gpu-check (static cudart): on an NVIDIA machine it checks
# the kernels against the CPU path and prints GFLOP/s, transfer and overhead
# figures, and PyTorch's cuBLAS/cuDNN figures when torch is installed.
.PHONY: cuda cuda-emulate cuda-tune gpu-check
NVCC ?= nvcc
CUDA_GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
CUDA_LIB := cudaplugin/build/liblanescuda.a
# One .cu file per op family (gemm.cu, conv.cu, ...), sharing common.cuh and tiles.cuh.
CUDA_SRCS := $(wildcard cudaplugin/*.cu)
CUDA_HDRS := cudaplugin/kernels.h $(wildcard cudaplugin/*.cuh)
CUDA_OBJS := $(patsubst cudaplugin/%.cu,cudaplugin/build/%.o,$(CUDA_SRCS))

cuda: $(CUDA_LIB)
	$(GO) build -tags cuda ./...

cudaplugin/build/%.o: cudaplugin/%.cu $(CUDA_HDRS)
	@mkdir -p cudaplugin/build
	$(NVCC) -std=c++17 -O3 -Xcompiler -fPIC $(CUDA_GENCODE) -c $< -o $@

$(CUDA_LIB): $(CUDA_OBJS)
	rm -f $@
	ar rcs $@ $(CUDA_OBJS)

cuda-emulate:
	@mkdir -p cudaplugin/build
	$$(command -v g++-12 || command -v g++) -std=c++20 -O1 -DLANES_EMULATE -Icudaplugin/emulate -pthread \
	  -x c++ $(CUDA_SRCS) -x none cudaplugin/emulate/emulate_test.cc -o cudaplugin/build/emulate_test
	cudaplugin/build/emulate_test

# cuda-tune times the kernels' tile configurations (run bin/cuda-tune on an NVIDIA machine).
cuda-tune:
	@mkdir -p bin
	$(NVCC) -std=c++17 -O3 $(CUDA_GENCODE) -Xptxas -warn-spills cudaplugin/tune/tune.cu -o bin/cuda-tune

gpu-check: $(CUDA_LIB)
	@mkdir -p bin
	$(GO) build -tags cuda -o bin/gpu-check ./cudaplugin/cmd/gpu-check
	@echo "built bin/gpu-check: run it on an NVIDIA machine (bin/gpu-check -h)"
