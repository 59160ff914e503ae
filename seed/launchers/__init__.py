"""Ways to start a run's processes: on this machine (local.py, behind ./run_local.sh), as a replica of a
Vertex AI or TF_CONFIG job (`seed-launch`, launch.py, the role resolved by cluster.py) and on a Ray
cluster (`seed-ray`, ray_launch.py). All start `python -m learner|actors` processes, import neither,
and restart what exited by one rule (restarts.py)."""
