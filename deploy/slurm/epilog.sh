#!/usr/bin/env bash
# Slurm epilog: after each job that had GPUs, `gpusight doctor --instant` looks at those GPUs (lost, Xid, ECC,
# pending row remaps, driver, persistence, ...) and its verdict is appended to the job's output file, so the user
# reads in their own log whether the GPUs were healthy when the job ended. It never fails the epilog (a failing epilog drains the
# node): it always exits 0, and the whole run is bounded by a timeout.
#
#   slurm.conf:   Epilog=/etc/slurm/epilog.d/gpusight.sh
#   (or call it from the epilog you have: `/etc/slurm/epilog.d/gpusight.sh || true`)
#
# From Slurm's epilog environment: SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_UID, SLURM_JOB_GID, and the job's
# GPUs from SLURM_JOB_GPUS, else SLURM_STEP_GPUS, else CUDA_VISIBLE_DEVICES (NVML indices, e.g. 0,2 or 0-3;
# UUIDs are not used). A job without GPUs gets nothing. Settings (environment, e.g. from slurmd's unit):
#   GPUSIGHT                 the binary (default: gpusight on PATH, else /usr/local/bin/gpusight)
#   GPUSIGHT_DOCTOR_ARGS     more arguments for doctor, split on spaces (e.g. "--config /etc/gpusight.toml")
#   GPUSIGHT_EPILOG_DURATION how long doctor watches (default 5s; 30s or more also judges the rules over a window,
#                            throttling included)
#   GPUSIGHT_EPILOG_TIMEOUT  seconds the doctor run may take in all (default 30; then it is killed)
#   GPUSIGHT_EPILOG_DIR      where the verdict goes when the job's output file is not known or cannot be
#                            written: DIR/slurm-JOBID.gpusight.txt (default /var/log/gpusight)
#   GPUSIGHT_SCONTROL        scontrol (default: scontrol on PATH), asked for the job's StdOut
#
# The output file is appended to as the job's user (setpriv, when the epilog runs as root), never as root: the
# user owns that path and could point it anywhere. docs/deploy.md has the details.

# Whatever happens below, the epilog succeeds.
trap 'exit 0' EXIT

job=${SLURM_JOB_ID:-}
duration=${GPUSIGHT_EPILOG_DURATION:-5s}
limit=${GPUSIGHT_EPILOG_TIMEOUT:-30}
fallback_dir=${GPUSIGHT_EPILOG_DIR:-/var/log/gpusight}
scontrol=${GPUSIGHT_SCONTROL:-scontrol}

# The job's GPUs as a comma list of indices ("0-2,5" becomes 0,1,2,5), or nothing.
job_gpus() {
  local list item out=()
  for list in "${SLURM_JOB_GPUS:-}" "${SLURM_STEP_GPUS:-}" "${CUDA_VISIBLE_DEVICES:-}"; do
    [ -n "$list" ] || continue
    out=()
    for item in ${list//,/ }; do
      if [[ $item =~ ^[0-9]+$ ]]; then
        out+=("$item")
      elif [[ $item =~ ^([0-9]+)-([0-9]+)$ ]] && [ "${BASH_REMATCH[2]}" -lt 1024 ]; then
        for ((i = BASH_REMATCH[1]; i <= BASH_REMATCH[2]; i++)); do out+=("$i"); done
      else
        out=()
        break
      fi
    done
    if [ ${#out[@]} -gt 0 ]; then
      (IFS=,; echo "${out[*]}")
      return
    fi
  done
}

# The job's StdOut from scontrol, when it is an absolute path with no unexpanded %-pattern.
job_stdout() {
  [ -n "$job" ] || return
  local line path
  line=$(timeout 10 "$scontrol" show job -o "$job" 2>/dev/null) || return
  path=$(printf '%s\n' "$line" | sed -n 's/.*[[:space:]]StdOut=\([^[:space:]]*\).*/\1/p' | head -1)
  case "$path" in
    /dev/null | *%*) return ;;
    /*) printf '%s\n' "$path" ;;
  esac
}

# Appends stdin to $1 as the job's user when running as root for another user; as ourselves otherwise.
append_as_job_user() {
  local path=$1 uid=${SLURM_JOB_UID:-} gid
  if [ "$(id -u)" -eq 0 ] && [ -n "$uid" ] && [ "$uid" != 0 ]; then
    gid=${SLURM_JOB_GID:-$(id -g "$uid" 2>/dev/null)}
    [ -n "$gid" ] || return 1
    # shellcheck disable=SC2016
    setpriv --reuid="$uid" --regid="$gid" --clear-groups -- sh -c 'cat >> "$1"' sh "$path"
  else
    cat >> "$path"
  fi
}

gpus=$(job_gpus)
[ -n "$gpus" ] || exit 0

binary=${GPUSIGHT:-}
if [ -z "$binary" ]; then
  binary=$(command -v gpusight || echo /usr/local/bin/gpusight)
fi
# shellcheck disable=SC2206
extra=(${GPUSIGHT_DOCTOR_ARGS:-})
# --instant: the rules that need no window are what a few seconds can judge; without it a watch shorter than every
# window is "unknown" (exit 3) however healthy the GPUs are.
report=$(timeout --kill-after=5 "$limit" "$binary" doctor --instant --only "$gpus" --duration "$duration" \
  --color never "${extra[@]}" 2>&1)
status=$?
case $status in
  0) verdict="healthy" ;;
  1) verdict="WARNING" ;;
  2) verdict="CRITICAL" ;;
  3) verdict="could not check" ;;
  124 | 137) verdict="no verdict: doctor took longer than ${limit} s and was stopped" ;;
  126 | 127) verdict="no verdict: $binary could not be run" ;;
  *) verdict="no verdict: doctor exited $status" ;;
esac

text=$(
  echo
  echo "==== gpusight doctor after Slurm job ${job:-?} on $(hostname 2>/dev/null || uname -n), GPUs $gpus: $verdict (exit $status) ===="
  printf '%s\n' "$report"
)

output_file=$(job_stdout)
if [ -n "$output_file" ] && printf '%s\n' "$text" | append_as_job_user "$output_file" 2>/dev/null; then
  exit 0
fi
mkdir -p "$fallback_dir" 2>/dev/null
printf '%s\n' "$text" >> "$fallback_dir/slurm-${job:-unknown}.gpusight.txt" 2>/dev/null
exit 0
