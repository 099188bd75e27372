# Shared by the experiments' run.sh (sourced, not run): what REUSE=1 does with a model that a run
# trains, so that an interrupted experiment continues where it stopped.

# reuse_plan MODEL LOG: prints "keep" when REUSE=1 and MODEL exists (trained: skip it); "resume"
# when REUSE=1 and a periodic checkpoint of it exists (MODEL without .h5, then .step<N>.h5, as the
# trainer names them: train with --resume, appending to LOG); otherwise "fresh", emptying LOG.
reuse_plan() {
  local model=$1 log=$2
  if [ "${REUSE:-0}" = 1 ] && [ -f "$model" ]; then echo keep; return; fi
  if [ "${REUSE:-0}" = 1 ] && compgen -G "${model%.h5}.step*.h5" >/dev/null; then echo resume; return; fi
  : >"$log"
  echo fresh
}
