"""The one run engine: the executor, the run registry, baselines, run descriptions, the job queue and its
schedules, alerts, the deployment gate and the leaderboard."""
