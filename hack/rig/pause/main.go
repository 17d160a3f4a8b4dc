// Prints "up", then sleeps until SIGTERM or SIGINT: the real node's sandbox (pause) image and
// the test workload of its images (see ../real-node.ts).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	fmt.Println("up")
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
