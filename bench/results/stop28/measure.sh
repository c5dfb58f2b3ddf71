#!/bin/bash
# Quiet-machine measurements of stop 28. Output under /tmp/m28 (binaries built by build.sh).
set -x
cd /work/main
M=/tmp/m28
uptime > $M/uptime-start.txt
# 1. GEMM peaks, one thread then two (threads=2: the peak on both cores at once, same run)
GOMAXPROCS=2 $M/simd.test -test.run '^$' -test.bench 'FMAPeak|DgemmPeak/avx512|SgemmPeak/avx512' -test.count 2 > $M/peaks.txt 2>&1
# 2. Dgemm 2 threads against OpenBLAS (AVX-512 kernels and Debian's pick)
(cd bench/openblas && OPENBLAS_CORETYPE=SkylakeX $M/openblas.test -test.run xxx -test.bench 'BenchmarkDgemm/threads=2/1024' -test.benchtime 3x > $M/dgemm-openblas-skx.txt 2>&1)
(cd bench/openblas && $M/openblas.test -test.run xxx -test.bench 'BenchmarkDgemm/threads=2/1024' -test.benchtime 3x > $M/dgemm-openblas-debian.txt 2>&1)
# 3. reductions and Add, float64 and float32, against vek and gcc (the main job, interleaved)
$M/lanesbench -conv=false -gemm "" -ops SumF64,SumAbsF64,MaxF64,MinF64,DotF64,AddF64,Sum,SumAbs,Dot,Max,Add -sizes 1000,10000,100000,1000000 -rounds 11 -benchstat $M/main-job.bench > $M/main-job.txt 2>&1
# 4. Fashion MLP: 1 process x 2 threads; 2 ranks x 1 thread through dist's shared mapping
# (mpi+shm) and through MPI's shared memory (LANES_DIST_SHM=0); PyTorch, interleaved
for i in 1 2 3; do
  GOMAXPROCS=2 $M/fashion -model mlp -epochs 1 >> $M/mlp-1proc.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 --mca btl self,vader $M/fashion.mpi -model mlp -epochs 1 -dist mpi >> $M/mlp-2rank-shm.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 -x LANES_DIST_SHM=0 --mca btl self,vader $M/fashion.mpi -model mlp -epochs 1 -dist mpi >> $M/mlp-2rank-vader.txt 2>&1
  GOMAXPROCS=1 $M/fashion -model mlp -epochs 1 >> $M/mlp-1proc-1thread.txt 2>&1
  GOMAXPROCS=2 /tmp/m27/fashion -model mlp -epochs 1 >> $M/mlp-1proc-stop27.txt 2>&1
  if [ $i -le 2 ]; then /usr/bin/python3 bench/torchref/fashion.py -model mlp -epochs 1 >> $M/mlp-torch.txt 2>&1; fi
done
# 5. Fashion CNN, one epoch each, peak RSS; 2 ranks through the mapping; stop 27's binary
# (commit 625daaa, /tmp/m27) interleaved for the same-run before/after
$M/fashion -model cnn -epochs 1 > $M/cnn-lanes.txt 2>&1
/usr/bin/python3 bench/torchref/fashion.py -model cnn -epochs 1 > $M/cnn-torch.txt 2>&1
mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 --mca btl self,vader $M/fashion.mpi -model cnn -epochs 1 -dist mpi > $M/cnn-2rank-shm.txt 2>&1
/tmp/m27/fashion -model cnn -epochs 1 > $M/cnn-stop27.txt 2>&1
$M/fashion -model cnn -epochs 1 >> $M/cnn-lanes.txt 2>&1
/tmp/m27/fashion -model cnn -epochs 1 >> $M/cnn-stop27.txt 2>&1
# 6. all-reduce: 1 MB and 100 MB, 2 and 4 ranks: through the mapping (shm), through MPI's
# shared memory (vader) and over TCP, dist's against Open MPI's own MPI_Allreduce
for np in 2 4; do
  for mb in 1 100; do
    it=5; [ $mb = 1 ] && it=1000
    mpirun --allow-run-as-root --oversubscribe -np $np -x GOMAXPROCS=1 --mca btl self,vader $M/allreduce -mb $mb -iters $it >> $M/allreduce.txt 2>&1
    mpirun --allow-run-as-root --oversubscribe -np $np -x GOMAXPROCS=1 -x LANES_DIST_SHM=0 --mca btl self,vader $M/allreduce -mb $mb -iters $it >> $M/allreduce.txt 2>&1
    mpirun --allow-run-as-root --oversubscribe -np $np -x GOMAXPROCS=1 -x LANES_DIST_SHM=0 --mca btl tcp,self $M/allreduce -mb $mb -iters $it >> $M/allreduce.txt 2>&1
  done
done
# 7. the CNN step's phases (BenchmarkCNNPhases) and whole steps, one thread then two
# (GOMAXPROCS in the environment: -cpu 1,2 let Go's runtime raise the first pass to 2 here)
(cd nn && GOMAXPROCS=1 $M/nn.test -test.run '^$' -test.bench 'CNNPhases|^BenchmarkTrainStep$' -test.benchtime 50x -test.count 2 > $M/phases-1thread.txt 2>&1)
(cd nn && GOMAXPROCS=2 $M/nn.test -test.run '^$' -test.bench 'CNNPhases|^BenchmarkTrainStep$' -test.benchtime 50x -test.count 2 > $M/phases-2threads.txt 2>&1)
# 8. gonum's mat with lanes installed (Dense.Mul, Cholesky, LU, SVD) against gonum and OpenBLAS
(cd bench && $M/gonummat -o $M/gonum-mat > $M/gonum-mat.txt 2>&1)
uptime > $M/uptime-end.txt
