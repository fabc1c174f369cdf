#!/bin/sh
# Two emulated hosts on one machine, for tests/test_multinode.py and docs/multinode.md.
#
#   netns_launcher.sh up HOST_A HOST_B     make network namespaces HOST_A and HOST_B, joined by a
#                                          veth pair whose ends are both named mrtlink (10.77.0.1/24
#                                          in A, 10.77.0.2/24 in B), each with an /etc/hosts (via
#                                          /etc/netns/NAME/hosts) naming both
#   netns_launcher.sh up HOST_A HOST_B HOST_C...
#                                          three or more hosts: in HOST_A a bridge named mrtlink
#                                          (10.77.0.1/24) with a port mrtpK (K = 2, 3, ...) for each
#                                          other host, whose veth end is mrtlink (10.77.0.K/24):
#                                          a switch, each host's link cut by itself (tc on mrtpK)
#   netns_launcher.sh down HOST_A HOST_B...  remove them again (no error if already gone)
#   netns_launcher.sh [ssh options] HOST COMMAND...
#                                          what MPICH's hydra runs in place of ssh
#                                          (mpiexec -launcher ssh -launcher-exec netns_launcher.sh),
#                                          and Open MPI's (PRTE_MCA_plm_ssh_agent=netns_launcher.sh):
#                                          run COMMAND inside the namespace named HOST
#
# Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's `ip`.
set -eu

addr_a=${MESHRT_NETNS_ADDR_A:-10.77.0.1}
addr_b=${MESHRT_NETNS_ADDR_B:-10.77.0.2}
link=${MESHRT_NETNS_LINK:-mrtlink}

case "${1:-}" in
up)
    if [ $# -gt 3 ]; then
        shift
        a=$1
        shift
        ip netns add "$a"
        ip -n "$a" link add "$link" type bridge
        ip -n "$a" addr add "$addr_a/24" dev "$link"
        ip -n "$a" link set lo up
        ip -n "$a" link set "$link" up
        names="$addr_a $a"
        k=2
        for ns in "$@"; do
            ip netns add "$ns"
            ip link add "mrtp$k" netns "$a" type veth peer name "$link" netns "$ns"
            ip -n "$a" link set "mrtp$k" master "$link"
            ip -n "$a" link set "mrtp$k" up
            ip -n "$ns" addr add "10.77.0.$k/24" dev "$link"
            ip -n "$ns" link set lo up
            ip -n "$ns" link set "$link" up
            names="$names
10.77.0.$k $ns"
            k=$((k + 1))
        done
        for ns in "$a" "$@"; do
            mkdir -p "/etc/netns/$ns"
            printf '127.0.0.1 localhost\n%s\n' "$names" > "/etc/netns/$ns/hosts"
        done
        for ns in "$@"; do
            tries=0
            until [ "$(ip netns exec "$ns" cat "/sys/class/net/$link/operstate")" = up ]; do
                tries=$((tries + 1))
                if [ $tries -gt 100 ]; then
                    echo "netns_launcher.sh: link $link in $ns did not come up" >&2
                    exit 1
                fi
                sleep 0.05
            done
        done
        exit 0
    fi
    a=$2 b=$3
    ip netns add "$a"
    ip netns add "$b"
    # One name for both ends (each lives in its own namespace), so one setting such as
    # UCX_NET_DEVICES=mrtlink or FI_TCP_IFACE=mrtlink serves every host.
    ip link add "$link" netns "$a" type veth peer name "$link" netns "$b"
    ip -n "$a" addr add "$addr_a/24" dev "$link"
    ip -n "$b" addr add "$addr_b/24" dev "$link"
    for ns in "$a" "$b"; do
        ip -n "$ns" link set lo up
        ip -n "$ns" link set "$link" up
        # `ip netns exec` bind-mounts /etc/netns/NS/* over /etc: each host resolves both names.
        mkdir -p "/etc/netns/$ns"
        printf '127.0.0.1 localhost\n%s %s\n%s %s\n' "$addr_a" "$a" "$addr_b" "$b" > "/etc/netns/$ns/hosts"
    done
    # The kernel reports a new link's carrier up to a second later; MPI's network
    # layers skip links that are not yet "up", so wait for both ends.
    for ns in "$a" "$b"; do
        tries=0
        until [ "$(ip netns exec "$ns" cat "/sys/class/net/$link/operstate")" = up ]; do
            tries=$((tries + 1))
            if [ $tries -gt 100 ]; then
                echo "netns_launcher.sh: link $link in $ns did not come up" >&2
                exit 1
            fi
            sleep 0.05
        done
    done
    ;;
down)
    shift
    for ns in "$@"; do
        ip netns del "$ns" 2>/dev/null || true   # deleting a namespace deletes its veth end
        rm -rf "/etc/netns/$ns"
    done
    ;;
*)
    # hydra calls: LAUNCHER -x HOST "proxy" --args...; like ssh, the words after HOST are
    # joined into one command line for a shell on the "remote" host.
    while [ $# -gt 0 ]; do
        case "$1" in
        -[1246AaCfGgKkMNnqsTtVvXxYy]) shift ;;
        -*) shift; shift ;;            # an ssh option with a value (-p 22, -o X=Y, ...)
        *) break ;;
        esac
    done
    host=$1
    shift
    case "$*" in
    *\;*) exec ip netns exec "$host" sh -c "cd '$PWD' && $*" ;;  # a list: Open MPI's "VAR=..; export ..; prted"
    *) exec ip netns exec "$host" sh -c "cd '$PWD' && exec $*" ;;
    esac
    ;;
esac
