#!/bin/bash
# Quiet-machine measurements of stop 26. Output under /tmp/m26 (binaries built by build25.sh).
set -x
cd /work/main
M=/tmp/m26
uptime > $M/uptime-start.txt
# 1. GEMM peaks, one thread (the FMA loop in the same process), then two threads
# (threads=1 and threads=2 sub-benchmarks; with two threads the peak runs on both cores at once)
GOMAXPROCS=2 $M/simd.test -test.run '^$' -test.bench 'FMAPeak|DgemmPeak/avx512|SgemmPeak/avx512' -test.count 2 > $M/peaks.txt 2>&1
# 2. Dgemm 2 threads against OpenBLAS (AVX-512 kernels and Debian's pick)
(cd bench/openblas && OPENBLAS_CORETYPE=SkylakeX $M/openblas.test -test.run xxx -test.bench 'BenchmarkDgemm/threads=2/1024' -test.benchtime 3x > $M/dgemm-openblas-skx.txt 2>&1)
(cd bench/openblas && $M/openblas.test -test.run xxx -test.bench 'BenchmarkDgemm/threads=2/1024' -test.benchtime 3x > $M/dgemm-openblas-debian.txt 2>&1)
# 3. reductions and float64 ops vs vek and gcc (the main job, interleaved)
$M/lanesbench -conv=false -gemm "" -ops SumF64,SumAbsF64,MaxF64,MinF64,DotF64,AddF64,Sum,SumAbs,Dot,Max,Add -benchstat $M/main-job.bench > $M/main-job.txt 2>&1
# 4. Fashion MLP: 1 process x 2 threads vs 2 ranks x 1 thread (shared memory; yield), PyTorch
for i in 1 2; do
  GOMAXPROCS=2 $M/fashion -model mlp -epochs 1 >> $M/mlp-1proc.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 --mca btl self,vader $M/fashion.mpi -model mlp -epochs 1 -dist mpi >> $M/mlp-2rank-sm.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 --mca btl self,vader --mca mpi_yield_when_idle 1 $M/fashion.mpi -model mlp -epochs 1 -dist mpi >> $M/mlp-2rank-sm-yield.txt 2>&1
done
/usr/bin/python3 bench/torchref/fashion.py -model mlp -epochs 1 > $M/mlp-torch.txt 2>&1
# 5. Fashion CNN, one epoch each, peak RSS; 2 ranks
$M/fashion -model cnn -epochs 1 > $M/cnn-lanes.txt 2>&1
/usr/bin/python3 bench/torchref/fashion.py -model cnn -epochs 1 > $M/cnn-torch.txt 2>&1
mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 --mca btl self,vader $M/fashion.mpi -model cnn -epochs 1 -dist mpi > $M/cnn-2rank-sm.txt 2>&1
$M/fashion -model cnn -epochs 1 >> $M/cnn-lanes.txt 2>&1
$M/fashion -model cnn -epochs 1 -split 2 > $M/cnn-lanes-split.txt 2>&1
GOMAXPROCS=2 $M/fashion -model mlp -epochs 1 -split 2 > $M/mlp-1proc-split.txt 2>&1
# 6. all-reduce of 100 MB over TCP on localhost: dist against Open MPI's MPI_Allreduce
for np in 2 4; do
  mpirun --allow-run-as-root --oversubscribe -np $np --mca btl tcp,self $M/allreduce -mb 100 -iters 5 >> $M/allreduce-tcp.txt 2>&1
done
# 7. gonum's mat with lanes installed (Dense.Mul, Cholesky, LU, SVD) against gonum and OpenBLAS
(cd bench && $M/gonummat -o $M/gonum-mat > $M/gonum-mat.txt 2>&1)
uptime > $M/uptime-end.txt
