# Karp-Flatt experimentally determined serial fraction e = (1/S - 1/p) / (1 - 1/p) against
# ranks, p = ranks / baseline ranks: flat means a fixed serial part, rising means overhead that
# grows with the ranks (communication).
# Data blocks: one per configuration; first line its title, then "ranks e" rows.
DATAFILE = "karp_flatt.dat"
OUTBASE = "karp_flatt"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Karp-Flatt serial fraction, experiment ".EXPERIMENT
set xlabel "MPI ranks"
set ylabel "serial fraction e (1 = no speedup)"
set logscale x 2
eval "set xtics ".RANK_TICS
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lt i + 1 lw 2 pt (i % 12) + 1 ps 1.3 title columnheader(1)'
