# Speedup against MPI ranks: one line per configuration, median over repeats with bootstrap 95%
# error bars; dashed, ideal (linear) speedup.
# Data blocks: block 0 is the ideal line, then one block per configuration; each block's first
# line is its title, then "ranks median low high" rows.
DATAFILE = "speedup.dat"
OUTBASE = "speedup"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Speedup (".SCALING.", time per sample), experiment ".EXPERIMENT
set xlabel "MPI ranks"
set ylabel "speedup over the baseline point (x)"
set logscale x 2
# RANK_TICS lists the measured rank counts, e.g. "(1, 2, 3, 4)".
eval "set xtics ".RANK_TICS
PLOT = 'plot DATAFILE index 0 using 1:2 with lines dt 2 lw 1.5 lc "gray40" title columnheader(1), for [i=1:BLOCKS-1] DATAFILE index i using 1:2:3:4 with yerrorlines lt i lw 2 pt (i % 12) + 1 ps 1.3 title columnheader(1)'
