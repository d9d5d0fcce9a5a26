"""Every benchmark in one run: the limiter scenarios (reference vs adaptive) over HTTP and on the fake-clock model,
the randomized scenario families on the model (bench_families.py, with the reference and the AWS SDK baselines),
then client overhead, memory and parallel models. About 12 minutes on 2 cores; --quick about 4. --http adds the
families over real HTTP (bench_families_http.py, 2 draws each: about 30 minutes more); --gateway the LiteLLM
proxy's per-minute limit (bench_gateway.py: about 10 minutes more, with the proxy .ci/run installs) and nginx's
limit_req and limit_conn (bench_nginx.py: about 7 minutes more, with Debian's nginx).

    uv run --group bench python benchmarks/run_all.py [--quick] [--http] [--gateway]

(Without the bench group, bench_families runs without the AWS baseline: --policies adaptive,reference.)
"""
import argparse
import importlib.util

import bench_client
import bench_families
import bench_families_http
import bench_gateway
import bench_limiter
import bench_model
import bench_nginx

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer photos and rounds (the targets are for the full run)")
    ap.add_argument("--http", action="store_true", help="the scenario families over HTTP too (~30 minutes)")
    ap.add_argument("--gateway", action="store_true",
                    help="the LiteLLM proxy's per-minute limit and nginx's limits too (~17 minutes)")
    args = ap.parse_args()
    quick = ["--quick"] if args.quick else []
    bench_limiter.main(quick)
    print()
    bench_model.main(["--seeds", "10" if args.quick else "30"])
    print()
    aws = importlib.util.find_spec("botocore") is not None
    bench_families.main((["--fast"] if args.quick else []) + ([] if aws else ["--policies", "adaptive,reference"]))
    print()
    if args.http:
        bench_families_http.main([])
        print()
    if args.gateway:
        bench_gateway.main([])
        print()
        bench_nginx.main([])
        print()
    bench_client.main(quick)
