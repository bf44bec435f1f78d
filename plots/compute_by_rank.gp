# Each rank's compute time per step (forward, backward, update), one line per configuration with
# two training ranks or more: the median over a bounded sample of the steps (every rank at the
# same steps; harness/results/record.h RankComputeSample), with error bars from the 5th to the
# 95th percentile. A straggler stands above the others; a configuration that the harness flags
# has "straggler: rank R (host)" in its title (harness/results/stragglers.h).
# Data blocks: one per configuration; first line its title, then "rank median_ms p05_ms p95_ms" rows.
DATAFILE = "compute_by_rank.dat"
OUTBASE = "compute_by_rank"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Compute time by rank, experiment ".EXPERIMENT
set xlabel "MPI rank"
set ylabel "compute per step (ms)"
# A tic per rank, up to 32 of them; gnuplot's own integer tics above.
if (STATS_max <= 32) { set xtics 1 } else { set format x "%.0f" }
set yrange [0:*]
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2:3:4 with yerrorlines lt i + 1 lw 2 pt (i % 12) + 2 ps 1.3 title columnheader(1)'
