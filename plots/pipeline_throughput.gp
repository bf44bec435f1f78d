# Scheme pipeline: training throughput against the micro-batches each replica's batch is split
# into, one line per schedule and layout (stages x replicas), median over repeats with bootstrap
# 95% error bars. More micro-batches shrink the bubble and the work per pass.
# Data blocks: one per configuration; first line its title, then "micro_batches median low high" rows.
DATAFILE = "pipeline_throughput.dat"
OUTBASE = "pipeline_throughput"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Pipeline throughput against micro-batches, experiment ".EXPERIMENT
set xlabel "micro-batches per replica and step (m)"
set ylabel "throughput (samples/s, all ranks)"
set logscale x 2
set yrange [0:*]
PLOT = 'set key below horizontal maxcols 2 box; plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2:3:4 with yerrorlines lt i + 1 lw 2 pt (i % 12) + 2 ps 1.3 title columnheader(1)'
