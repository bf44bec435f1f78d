# Training throughput over all ranks against MPI ranks, one line per configuration.
# Data blocks: one per configuration; first line its title, then "ranks samples_per_s" rows.
DATAFILE = "throughput.dat"
OUTBASE = "throughput"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title EXPERIMENT.": training throughput"
set xlabel "MPI ranks"
set key top left
set ylabel "throughput (samples/s, all ranks)"
set logscale x 2
set xtics 2
set yrange [0:*]
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 pt (i % 12) + 1 ps 1.3 title columnheader(1)'
