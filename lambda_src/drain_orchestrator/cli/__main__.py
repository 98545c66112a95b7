"""`python -m drain_orchestrator.cli`: the `drain-orchestrator` console command."""

from drain_orchestrator.cli import main

raise SystemExit(main())
