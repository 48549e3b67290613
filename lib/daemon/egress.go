package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/egress"
	"github.com/disinto/disinto/lib/metrics"
	"github.com/disinto/disinto/lib/sandbox"
)

// How far sessions reach, as /status and `disinto status` report it.
const (
	// EgressFiltered: the firewall holds; sessions reach the gateway and
	// the egress proxy only.
	EgressFiltered = "filtered"
	// EgressUnfiltered: the firewall could not be installed and the
	// operator accepted that (--allow-unisolated-sessions): sessions
	// reach whatever the daemon's network does.
	EgressUnfiltered = "unfiltered"
)

// sessionEgress keeps isolated sessions off the network: the firewall on
// their uids, the egress proxy, and, when the model gateway is another
// container's, a relay to it on loopback (sessions reach no other host).
type sessionEgress struct {
	proxy *egress.Proxy
	fw    *egress.Firewall
	relay *http.Server
	// gatewayURL is the gateway as sessions reach it.
	gatewayURL string
	mode       string
}

// startEgress sets up the egress of sessions in sb, whose model gateway
// is at gwURL, for the daemon of instance. Sessions that are not
// isolated run as the daemon's user, whose network no rule can bound
// apart from the daemon's: nothing is set up (nil). If the firewall
// cannot be installed, sessions do not run unless allowUnisolated.
func startEgress(cfg *config.Config, sb *sandbox.Sandbox, gwURL, instance string, allowUnisolated bool, reg *metrics.Registry, log zerolog.Logger) (_ *sessionEgress, err error) {
	if !sb.Isolated() {
		return nil, nil
	}
	e := &sessionEgress{gatewayURL: gwURL}
	defer func() {
		if err != nil {
			_ = e.close()
		}
	}()
	gw, err := e.sessionGateway(gwURL, log)
	if err != nil {
		return nil, err
	}
	allow := map[string][]string{}
	for _, p := range cfg.Projects {
		allow[p.Name] = p.Egress.Allow
	}
	po := egress.ProxyOptions{Allow: allow, Log: log}
	if reg != nil {
		po.Observer = reg
	}
	if e.proxy, err = egress.NewProxy(po); err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	e.proxy.Serve(ln)
	proxy := ln.Addr().(*net.TCPAddr).AddrPort()

	table := egress.TableName(instance)
	e.fw, err = egress.Install(egress.Options{Rules: egress.Rules{Table: table, Allow: []netip.AddrPort{gw, proxy}}, Log: log})
	switch {
	case err == nil:
		sb.SetGuard(e.fw)
		e.mode = EgressFiltered
		log.Info().Str("table", table).Str("gateway", gw.String()).Str("proxy", proxy.String()).Msg("egress firewall installed: sessions reach the gateway and the egress proxy only")
	case allowUnisolated && errors.Is(err, egress.ErrUnavailable):
		e.mode = EgressUnfiltered
		log.Warn().Msgf("UNFILTERED SESSION NETWORK: %v; sessions reach whatever this container's network does (--allow-unisolated-sessions)", err)
	default:
		return nil, fmt.Errorf("model sessions cannot be kept off the network: %w; "+
			"run the daemon with NET_ADMIN in its own network namespace (the compose stack does) or pass --allow-unisolated-sessions (DISINTO_ALLOW_UNISOLATED_SESSIONS=1) to accept that sessions reach the network", err)
	}
	return e, nil
}

// sessionGateway is the gateway's listener as the firewall lets sessions
// reach it. A gateway of this process listens on loopback; another
// container's gets a relay here, and sessions its address.
func (e *sessionEgress) sessionGateway(gwURL string, log zerolog.Logger) (netip.AddrPort, error) {
	u, err := url.Parse(gwURL)
	if err != nil || u.Host == "" {
		return netip.AddrPort{}, fmt.Errorf("model gateway URL %q: not a URL", gwURL)
	}
	if ap, err := netip.ParseAddrPort(u.Host); err == nil && ap.Addr().IsLoopback() {
		return ap, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("model gateway relay: %w", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		FlushInterval: -1,
		// Never through a proxy of the daemon's environment.
		Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 15 * time.Second}).DialContext, IdleConnTimeout: 90 * time.Second},
	}
	e.relay = &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := e.relay.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("model gateway relay stopped")
		}
	}()
	e.gatewayURL = "http://" + ln.Addr().String()
	return ln.Addr().(*net.TCPAddr).AddrPort(), nil
}

// sessionsGateway is the gateway URL sessions get: gwURL, or its relay.
func (e *sessionEgress) sessionsGateway(gwURL string) string {
	if e == nil {
		return gwURL
	}
	return e.gatewayURL
}

// proxyURL is the model runner's EgressProxy: nil without the proxy.
func (e *sessionEgress) proxyURL() func(project string) string {
	if e == nil || e.proxy == nil {
		return nil
	}
	return e.proxy.URL
}

// egressMode is how far sessions reach: EgressFiltered, EgressUnfiltered,
// or "" when they are not isolated at all.
func (e *sessionEgress) egressMode() string {
	if e == nil {
		return ""
	}
	return e.mode
}

// close removes the firewall and stops the proxy and the relay.
func (e *sessionEgress) close() error {
	if e == nil {
		return nil
	}
	var errs []error
	if e.proxy != nil {
		errs = append(errs, e.proxy.Close())
	}
	if e.relay != nil {
		errs = append(errs, e.relay.Close())
	}
	if e.fw != nil {
		errs = append(errs, e.fw.Close())
	}
	return errors.Join(errs...)
}
