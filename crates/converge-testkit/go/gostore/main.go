// terraform-provider-gostore: Converge's test Terraform provider written in
// Go and served by HashiCorp's go-plugin, as every released provider is
// (AutoMTLS with go-plugin's own P-521 certificate, the GRPCController's
// Shutdown). It serves protocol 5 and protocol 6 (GOSTORE_PROTOCOLS=5 or
// =6 restricts it, as a provider built for one version would be).
//
// Its objects are JSON files in a directory (the provider configuration's
// `directory`, else $GOSTORE_DIRECTORY). The release is read from the
// executable's name, terraform-provider-gostore_vVERSION: releases 1.x have
// schema version 1 (`content`), later ones schema version 2 (`value`), and
// upgrade version 1 states.
//
// When $GOSTORE_EVENTS names a file, the process appends one line per
// event: "start PID PROTOCOL", "configure PID", "stop PID" (StopProvider)
// and "exit PID" when it ends through go-plugin's Shutdown; a process that
// was killed writes no "exit".
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"gostore/tfplugin5"
	"gostore/tfplugin6"
)

var handshake = plugin.HandshakeConfig{
	MagicCookieKey:   "TF_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
}

// v5Plugin and v6Plugin register the provider's gRPC service.
type v5Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	p *provider
}

func (p *v5Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	event("start", "5")
	tfplugin5.RegisterProviderServer(s, &server5{p: p.p})
	return nil
}

func (p *v5Plugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (interface{}, error) {
	return nil, fmt.Errorf("a provider has no client side")
}

type v6Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	p *provider
}

func (p *v6Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	event("start", "6")
	tfplugin6.RegisterProviderServer(s, &server6{p: p.p})
	return nil
}

func (p *v6Plugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (interface{}, error) {
	return nil, fmt.Errorf("a provider has no client side")
}

// release is the version in the executable's name ("2.0.0" if none).
func release() string {
	m := regexp.MustCompile(`_v([0-9][^/]*)$`).FindStringSubmatch(filepath.Base(os.Args[0]))
	if m == nil {
		return "2.0.0"
	}
	return m[1]
}

// event appends a line to $GOSTORE_EVENTS.
func event(what string, more ...string) {
	path := os.Getenv("GOSTORE_EVENTS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fields := append([]string{what, fmt.Sprint(os.Getpid())}, more...)
	fmt.Fprintln(f, strings.Join(fields, " "))
}

func main() {
	p := newProvider(release())
	versions := map[int]plugin.PluginSet{
		5: {"provider": &v5Plugin{p: p}},
		6: {"provider": &v6Plugin{p: p}},
	}
	switch os.Getenv("GOSTORE_PROTOCOLS") {
	case "5":
		delete(versions, 6)
	case "6":
		delete(versions, 5)
	case "4":
		versions = map[int]plugin.PluginSet{4: {"provider": &v5Plugin{p: p}}}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: versions,
		GRPCServer:       plugin.DefaultGRPCServer,
	})
	event("exit", peakRSS())
}

// peakRSS is the process's peak resident set ("VmHWM" in kB), or "".
func peakRSS() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.Fields(line)[1]
		}
	}
	return ""
}
