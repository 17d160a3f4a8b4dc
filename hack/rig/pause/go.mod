// The real node's sandbox ("pause") image and test workloads: sleeps until SIGTERM. See ../real-node.ts.
module wave.local/hack/rig/pause

go 1.26.0
