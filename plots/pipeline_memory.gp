# Scheme pipeline: each stage's peak activation memory (its allocations during a step above the
# step's start), one line per configuration (its first run): GPipe's first stage holds every
# micro-batch, 1F1B's at most as many as there are stages.
# Data blocks: one per configuration; first line its title, then "stage megabytes" rows.
DATAFILE = "pipeline_memory.dat"
OUTBASE = "pipeline_memory"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Peak activation memory per stage, experiment ".EXPERIMENT
set xlabel "stage"
set ylabel "peak activation memory (MB)"
set xtics 1
set yrange [0:*]
PLOT = 'set key below horizontal maxcols 2 box; plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lt i + 1 lw 2 pt (i % 12) + 2 ps 1.3 title columnheader(1)'
