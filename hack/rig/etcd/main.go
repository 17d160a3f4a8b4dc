// Command etcd is a thin wrapper around etcd's own main, so etcd can be built from Go modules
// (`go install go.etcd.io/etcd/server/v3@...` is refused because of its replace directives).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
