# respbench's container image: the release binary on Debian slim.
#
#   docker build -t respbench .
#   docker run --rm --network host respbench -h 10.0.0.5 -t get -n 1000000 -q
#
# The build stage compiles with the Rust toolchain of the official image (ring, behind --tls,
# needs its C compiler); the run stage holds the binary, CA certificates for --tls without
# --cacert, and nothing else. The binary links only glibc, which bookworm-slim provides.

FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p respbench \
    && cp target/release/respbench /usr/local/bin/respbench

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/respbench /usr/local/bin/respbench
# Not root: a load generator needs no privilege.
USER nobody
ENTRYPOINT ["/usr/local/bin/respbench"]
CMD ["--help"]
