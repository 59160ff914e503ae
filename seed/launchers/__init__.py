"""Ways to start a run's processes on a cluster: `seed-launch` (a replica of a Vertex AI or
TF_CONFIG job, launch.py, with the role resolved by cluster.py) and `seed-ray` (placement on a
Ray cluster, ray_launch.py). They start `python -m learner|actors` processes and import neither."""
