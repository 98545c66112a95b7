// Wrapper module for aws-node-termination-handler (the side-by-side benchmark in bench/; not part of `make setup`).
module drainbins/nth

go 1.26.0

require github.com/aws/aws-node-termination-handler v1.25.1
