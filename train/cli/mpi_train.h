/* mpi_train.h -- 'dpgd train' under mpirun (built with cmake -DDPGD_MPI=ON; mpi.c,
 * train/MPI.md). Rank 0 runs the command as one process would; the other ranks serve
 * its steps' clipped sums. */
#ifndef DPGD_MPI_TRAIN_H
#define DPGD_MPI_TRAIN_H

#include "cli.h"
#include "dpgd_train.h"

/* Runs train(argc, argv): directly when the process was not started by mpirun; else
 * MPI_Init, train on rank 0 while the other ranks serve it until it stops them with its
 * exit status, MPI_Finalize. Returns the exit status (every rank returns rank 0's). */
int dpgd_mpi_train(int argc, char **argv, dpgd_cmd_fn *train);

/* Rank 0, after the run is opened or resumed: sends the resolved config to the other
 * ranks, which load the training set and the model, and has the run's clipped sums
 * computed by all ranks. DPGD_OK without doing anything when not under mpirun. A rank
 * that cannot follow (other data, no memory) fails it with the rank's reason. */
int dpgd_mpi_attach(dpgd_run *r);

/* Rank 0, after training: one line on stderr with the ranks, the median time of a
 * step's sum and the bytes the ranks exchanged per step (non-private diagnostics);
 * nothing when not under mpirun or before any step. */
void dpgd_mpi_report(void);

#endif /* DPGD_MPI_TRAIN_H */
