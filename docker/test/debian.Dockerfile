# Test-only stand-in for debian:bookworm-slim on machines that reach no
# container registry: a minbase rootfs made by mmdebstrap (imported as
# disinto-test/debian-rootfs:bookworm) plus this machine's CA bundle, so that
# build steps trust the same TLS roots as the host (some CI networks
# re-sign TLS traffic). Built by tests/setup/docker.sh; the context holds
# host-ca.crt.
FROM disinto-test/debian-rootfs:bookworm
COPY host-ca.crt /etc/ssl/host-ca.crt
# A separate file: installing ca-certificates rewrites the system bundle but
# leaves this one alone. Go, OpenSSL and Node.js read these variables.
ENV SSL_CERT_FILE=/etc/ssl/host-ca.crt \
    NODE_EXTRA_CA_CERTS=/etc/ssl/host-ca.crt \
    GIT_SSL_CAINFO=/etc/ssl/host-ca.crt
CMD ["bash"]
