"""The local test bed: a real control plane with kwok nodes and the AWS emulator, for the tests, the demo, the
benchmarks and the README's walk-through (docs/testbed.md). `python -m testbed up|down|status|env`."""
