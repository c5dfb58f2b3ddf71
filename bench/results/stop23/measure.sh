#!/bin/bash
# Quiet-machine measurements of stop 23. Output under /tmp/m23 (binaries built by build23.sh).
set -x
cd /work/main
M=/tmp/m23
uptime > $M/uptime-start.txt
# 1. depthwise Conv2D and ConvTranspose2D vs PyTorch, same run, interleaved
for i in 1 2; do
  $M/tensor.test -test.run '^$' -test.bench 'DepthwiseConv2D|ConvTranspose2D' -test.count 2 >> $M/conv-lanes.txt 2>&1
  /usr/bin/python3 bench/torchref/depthwise.py -count 2 >> $M/conv-torch.txt 2>&1
done
# 2. reductions and float64 ops vs vek and gcc (the main job, interleaved)
$M/lanesbench -conv=false -gemm "" -ops SumF64,SumAbsF64,MaxF64,MinF64,DotF64,AddF64,Sum,SumAbs,Dot,Max,Min,Add -benchstat $M/main-job.bench > $M/main-job.txt 2>&1
# 3. GEMM peaks
$M/simd.test -test.run '^$' -test.bench 'FMAPeak|DgemmPeak|SgemmPeak' -test.count 2 > $M/peaks.txt 2>&1
# 4. new elementwise functions vs math loops
$M/simd.test -test.run '^$' -test.bench '^Benchmark(Sin|Cos|Tan|Log1p|Expm1|MathLoop)' -test.benchtime 200ms > $M/elemfn.txt 2>&1
# 5. Fashion MLP: 1 process x 2 threads vs 2 ranks x 1 thread (shared memory and TCP), PyTorch
for i in 1 2; do
  GOMAXPROCS=2 $M/fashion -model mlp -epochs 1 >> $M/mlp-1proc.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 --mca btl self,vader $M/fashion.mpi -model mlp -epochs 1 -dist mpi >> $M/mlp-2rank-sm.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 --mca btl self,tcp $M/fashion.mpi -model mlp -epochs 1 -dist mpi >> $M/mlp-2rank-tcp.txt 2>&1
done
PATH=/usr/bin:$PATH python3 bench/torchref/fashion.py -model mlp -epochs 1 > $M/mlp-torch.txt 2>&1
# 6. Fashion CNN, one epoch each, peak RSS
$M/fashion -model cnn -epochs 1 > $M/cnn-lanes.txt 2>&1
PATH=/usr/bin:$PATH python3 bench/torchref/fashion.py -model cnn -epochs 1 > $M/cnn-torch.txt 2>&1
uptime > $M/uptime-end.txt
