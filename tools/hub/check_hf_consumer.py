#!/usr/bin/env python3
"""Checks that a Hugging Face cache written by InferDesk's downloader is used, as it is, by
programs no one here wrote: huggingface_hub resolves the snapshot with local_files_only=True (no
network), scan_cache_dir() finds nothing wrong with the layout, and transformers loads the config,
the tokenizer and (with --load-model, where torch is installed) the weights from it.

Run on the GPU machine (it has huggingface_hub and transformers; no internet is needed):

  # the whole loop: the local Hub, `inferdesk-cli download` into a temporary cache, then the checks
  python3 tools/hub/check_hf_consumer.py --download-with build/apps/cli/inferdesk-cli --load-model

  # the other way round: huggingface_hub downloads from the local Hub, then inferdesk-cli must find
  # every file in that cache and download nothing
  python3 tools/hub/check_hf_consumer.py --reverse build/apps/cli/inferdesk-cli

  # or a cache written elsewhere (e.g. copied over as a tar that keeps the symlinks)
  python3 tools/hub/check_hf_consumer.py --cache-dir DIR --repo inferdesk-test/tiny-chat

Exits 0 when every check passed, 1 with the failing check's message otherwise.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPO = "inferdesk-test/tiny-chat"


def start_local_hub():
    """tests/support/local_hub/local_hub.py on a free port: (process, endpoint URL)."""
    port_file = os.path.join(tempfile.mkdtemp(prefix="hub-consumer-"), "port")
    hub = subprocess.Popen([sys.executable, str(ROOT / "tests/support/local_hub/local_hub.py"),
                            "--model", str(ROOT / "tests/golden/models/tiny-chat"), "--port-file", port_file])
    for _ in range(200):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    return hub, "http://127.0.0.1:" + open(port_file).read().strip()


def run_cli(cli, endpoint, cache_dir):
    env = dict(os.environ, HF_ENDPOINT=endpoint, no_proxy="*", HF_HUB_OFFLINE="")
    env.pop("HF_TOKEN", None)
    run = subprocess.run([cli, "download", REPO, "--cache-dir", cache_dir], env=env, capture_output=True, text=True)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: inferdesk-cli download exited {run.returncode}")
    return run.stdout.strip(), run.stderr


def download_with_cli(cli: str, cache_dir: str) -> str:
    hub, endpoint = start_local_hub()
    try:
        return run_cli(cli, endpoint, cache_dir)[0]
    finally:
        hub.kill()
        hub.wait()


def reverse_check(cli: str) -> None:
    """huggingface_hub fills a cache from the local Hub; inferdesk-cli then downloads nothing."""
    hub, endpoint = start_local_hub()
    try:
        from huggingface_hub import snapshot_download

        cache_dir = tempfile.mkdtemp(prefix="hf-cache-reverse-")
        theirs = snapshot_download(REPO, cache_dir=cache_dir, endpoint=endpoint,
                                   allow_patterns=["*.json", "*.safetensors", "*.jinja", "README.md", "LICENSE"])
        urllib.request.urlopen(urllib.request.Request(endpoint + "/_control/reset", data=b"{}"))
        ours, err = run_cli(cli, endpoint, cache_dir)
        check("inferdesk-cli uses the snapshot huggingface_hub wrote", os.path.samefile(ours, theirs), ours)
        check("every file came from the cache", err.count("(from the cache)") == 9, f"{err.count('(from the cache)')} of 9")
        log = json.load(urllib.request.urlopen(endpoint + "/_control/requests"))
        fetched = [q["path"] for q in log if q["method"] == "GET" and ("/resolve/" in q["path"] or "/_cdn/" in q["path"])]
        check("not one file downloaded twice", not fetched, ", ".join(fetched))
    finally:
        hub.kill()
        hub.wait()


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
    if not ok:
        raise SystemExit(1)


def check_huggingface_hub(cache_dir, repo, revision, expected_snapshot):
    import huggingface_hub
    from huggingface_hub import hf_hub_download, scan_cache_dir, snapshot_download

    print(f"huggingface_hub {huggingface_hub.__version__}")
    path = snapshot_download(repo, revision=revision, cache_dir=cache_dir, local_files_only=True)
    check("snapshot_download(local_files_only=True) resolves the snapshot", os.path.isdir(path), path)
    if expected_snapshot:
        check("it is the folder inferdesk-cli printed", os.path.samefile(path, expected_snapshot), expected_snapshot)
    config = hf_hub_download(repo, "config.json", revision=revision, cache_dir=cache_dir, local_files_only=True)
    with open(config) as f:
        check("hf_hub_download(config.json) reads", "model_type" in json.load(f), config)
    info = scan_cache_dir(cache_dir)
    check("scan_cache_dir() reports no problem", not info.warnings, "; ".join(str(w) for w in info.warnings))
    repos = [r for r in info.repos if r.repo_id == repo]
    check("scan_cache_dir() lists the repository", len(repos) == 1)
    revisions = list(repos[0].revisions)
    check("one revision, refs recorded", len(revisions) == 1 and revision in revisions[0].refs,
          f"{[(r.commit_hash, sorted(r.refs)) for r in revisions]}")
    names = sorted(f.file_name for f in revisions[0].files)
    check("the pickle file is not there", "pytorch_model.bin" not in names, ", ".join(names))
    return path


def check_transformers(cache_dir, repo, revision, load_model):
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    print(f"transformers {transformers.__version__}")
    kw = dict(revision=revision, cache_dir=cache_dir, local_files_only=True)
    config = AutoConfig.from_pretrained(repo, **kw)
    check("AutoConfig loads", bool(config.model_type), config.model_type)
    tok = AutoTokenizer.from_pretrained(repo, **kw)
    ids = tok("Hello from the cache")["input_ids"]
    check("AutoTokenizer loads and encodes", len(ids) > 0, f"{len(ids)} tokens")
    if load_model:
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(repo, **kw)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits
        check("AutoModelForCausalLM loads the safetensors and runs",
              logits.shape[-1] == config.vocab_size and bool(torch.isfinite(logits).all()), str(tuple(logits.shape)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache-dir", help="the cache to check (default: a temporary one, with --download-with)")
    ap.add_argument("--repo", default=REPO)
    ap.add_argument("--revision", default="main")
    ap.add_argument("--download-with", metavar="CLI", help="inferdesk-cli to fill the cache from the local Hub first")
    ap.add_argument("--load-model", action="store_true", help="also load the weights with AutoModelForCausalLM")
    ap.add_argument("--reverse", metavar="CLI", help="huggingface_hub downloads first, inferdesk-cli must reuse it all")
    ap.add_argument("--reverse-child", metavar="CLI", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.reverse_child:
        reverse_check(args.reverse_child)
        return
    if args.reverse:
        # In its own process: huggingface_hub reads HF_HUB_OFFLINE once, at import, and the checks
        # below import it offline.
        if subprocess.run([sys.executable, __file__, "--reverse-child", args.reverse]).returncode != 0:
            raise SystemExit(1)
        if not args.cache_dir and not args.download_with:
            print("all checks passed")
            return
    if not args.cache_dir and not args.download_with:
        ap.error("give --cache-dir, --download-with, --reverse, or several")
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="hf-cache-")
    snapshot = download_with_cli(args.download_with, cache_dir) if args.download_with else None
    os.environ["HF_HUB_OFFLINE"] = "1"  # whatever the libraries try, nothing leaves this machine
    check_huggingface_hub(cache_dir, args.repo, args.revision, snapshot)
    check_transformers(cache_dir, args.repo, args.revision, args.load_model)
    print("all checks passed")


if __name__ == "__main__":
    main()
