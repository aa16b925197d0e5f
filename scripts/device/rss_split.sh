#!/usr/bin/env bash
# Resident memory of one process by mapping (kB, from /proc/PID/smaps), largest first: the NVIDIA driver libraries
# (libcuda, libnvidia-ml, the rest of libnvidia-*), the program's own binary, anonymous memory and heap (the
# program's own and NVML's), other pseudo-mappings, other files.
#   bash scripts/device/rss_split.sh PID
awk '
  /^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6) ? $6 : "[anonymous]"; next }
  /^Rss:/ {
    n = name
    if (n ~ /libcuda/) k = "libcuda"
    else if (n ~ /libnvidia-ml/) k = "libnvidia-ml"
    else if (n ~ /libnvidia/) k = "other libnvidia-*"
    else if (n ~ /gpusight|nvidia-smi/) k = "the program binary"
    else if (n == "[anonymous]" || n == "[heap]") k = "anonymous + heap"
    else if (n ~ /^\[/) k = "other " n
    else k = "other files"
    rss[k] += $2
  }
  END { for (k in rss) printf "%8d  %s\n", rss[k], k }
' "/proc/$1/smaps" | sort -rn
