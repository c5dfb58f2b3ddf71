#!/bin/bash
# Builds the binaries of stop 28's measurements into /tmp/m28 from /work/main's HEAD.
set -e
M=/tmp/m28; mkdir -p $M
cd /work/main
go test -c -o $M/simd.test ./simd
go build -o $M/fashion ./nn/cmd/fashion
go build -tags mpi -o $M/fashion.mpi ./nn/cmd/fashion
(cd bench && go build -o $M/lanesbench ./cmd/lanes)
(cd bench/openblas && go test -c -tags openblas -o $M/openblas.test .)
go build -tags mpi -o $M/allreduce ./dist/cmd/allreduce
(cd bench && go build -tags openblas -o $M/gonummat ./cmd/gonummat)
git rev-parse HEAD > $M/commit.txt
go test -c -o $M/nn.test ./nn
