// Package dist holds the communicators of data-parallel training
// (nn.DataParallel): a group of ranks that all-reduce, broadcast and
// all-gather float32 and float64 buffers in place, as MPI's collectives
// do.
//
// Two implementations of Comm:
//
//   - NewLocal and RunLocal: goroutines of one process as ranks, through
//     shared memory; for tests and for trying data-parallel code without
//     MPI. Always built.
//   - MPI: MPI_COMM_WORLD through cgo, in a binary built with -tags mpi
//     against Open MPI (Debian: apt-get install openmpi-bin
//     libopenmpi-dev) and launched by mpirun or Slurm's srun. Without the
//     tag (the default build is CGO_ENABLED=0), MPI returns ErrNoMPI.
//
// When every rank of MPI's group runs on one host (MPI_Comm_split_type),
// MPI puts an on-node transport under the all-reduces and barriers: rank
// 0 makes a file in /dev/shm (its length reserved up front, so a full
// /dev/shm fails at start, not with SIGBUS), every rank maps it, and rank
// 0 removes its name once all have. An all-reduce copies the rank's
// buffer into its slot of the mapping, reduces its chunk of every rank's
// slot in rank order and copies the others' chunks back, with two
// barriers (a store to the rank's word, polled, then a futex sleep);
// buffers longer than a slot go in pieces. Its results are the bits of
// the other implementations. Broadcast and AllGather stay MPI's, each
// preceded by an agreement through the mapping, so that ranks calling
// different collectives still panic rather than hang. LANES_DIST_SHM=0
// (ShmEnv) turns it off; Transport names the transport in use.
//
// # Reproducibility
//
// AllReduce adds the ranks' elements in rank order, ((x0 + x1) + x2) + ...,
// in both implementations (through the same code), so its result is the
// same bit for bit on every rank, in every run with the same number of
// ranks, and in process as under MPI. MPI's own MPI_Allreduce makes no
// such promise across message sizes: Open MPI 4.1's coll/tuned picks
// among recursive doubling, ring, segmented ring and Rabenseifner by
// message size and process count, so a result depends on the bucket
// size, and its order is not the in-process group's. The MPI Comm
// therefore all-reduces as a reduce-scatter through MPI_Alltoallv (each
// rank gets every rank's piece of its own chunk, Split), a rank-order sum
// of the pieces, and MPI_Allgatherv of the summed chunks: the volume of a
// ring (each rank sends and receives 2(P-1)/P of the buffer). Open MPI's
// MPI_Allreduce stays available as MPIAllReduceNative32, for comparison
// (dist/cmd/allreduce times both).
//
// Mean is Sum multiplied by the float32 (float64) reciprocal of the rank
// count: exact for 2, 4, 8 ... ranks, within one rounding of the sum
// otherwise.
//
// # Errors
//
// Programmer errors panic with a message naming the function: a dst of
// AllGather that is not Size times src, a root or Op out of range, and —
// on every rank alike, since every implementation checks what every rank
// passed (MPI with a small MPI_Allgather before each collective) — ranks
// that pass different lengths (naming the rank and both lengths), roots or
// Ops, or call different collectives. Runtime failures are errors: a
// closed communicator (ErrClosed), MPI's error codes (MPI_ERRORS_RETURN,
// with MPI_Error_string's text), buffers beyond MPI's int counts.
//
// # Threads
//
// Calls on a Comm must not overlap. The MPI Comm makes every MPI call on
// one goroutine locked to the OS thread that initialized MPI
// (MPI_THREAD_FUNNELED), so any goroutine may call it (nn.DataParallel
// calls it from a goroutine of its own while the backward pass runs).
// Open MPI polls while a collective waits (unless it yields, as it does
// when mpirun oversubscribes the cores: mpi_yield_when_idle), so a
// waiting rank can keep a core busy.
package dist
