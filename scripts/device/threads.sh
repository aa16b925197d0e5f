#!/usr/bin/env bash
# CPU seconds per thread of a process (by thread name), from /proc/PID/task/*/stat.
pid=$1; hz=$(getconf CLK_TCK)
for t in /proc/$pid/task/*; do s=$(cat $t/stat 2>/dev/null) || continue; name=$(cat $t/comm); rest=${s##*) }; set -- $rest; echo "$name $(( (${12} + ${13}) ))"; done | awk -v hz=$hz '{a[$1]+=$2} END {for (k in a) printf "  %-22s %.2f s\n", k, a[k]/hz}' | sort -k2 -rn
