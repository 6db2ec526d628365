/*
 * A session's network namespace (sessionInit.c includes it): its own loopback, so every session
 * binds any port and no session reaches another's, and its egress as its policy says:
 *
 *   shared  no namespace of its own: the container's network, as without isolation;
 *   none    a namespace with its loopback alone: connecting or resolving outside fails at once
 *           (ENETUNREACH: no route), never a silent drop;
 *   full    the loopback and a veth pair: `eth0` in the session, `bkr<N>` in the container, a /31 of
 *           100.64.0.0/10 (shared address space, which no engine network or host route here uses)
 *           with the container's end as the default route. The container forwards and masquerades
 *           that range out of its own interface (the broker sets that up once per container), so
 *           the session reaches what the container reaches.
 *
 * Why a veth and not user-mode networking (pasta, slirp4netns): the pair is a few system calls here,
 * in the init that already holds the capabilities, with no process per session and no copy of every
 * byte through user space; user-mode networking needs a program of the image's or the host's per
 * session. The NAT is one rule per container.
 *
 *   session-init net PID MODE
 *     The policy of the live session whose bash is container process PID, changed to MODE (`none`
 *     or `full`) during its lease: `none` removes its veth (both ends go), `full` adds one.
 * Exit statuses: 108 the namespace or its loopback, 109 the veth.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#define NET_BASE 0x64400000u /* 100.64.0.0 */
#define NET_PAIRS (1u << 21)  /* /31 pairs in 100.64.0.0/10 */
#define SESSION_IF "eth0"

/* One request: its header, its ifinfomsg, then its attributes, in one aligned buffer. */
union nl_request {
  struct nlmsghdr header;
  char bytes[1024];
};

/* An attribute at the end of `h` (a union nl_request's header: its buffer has the room). */
static struct rtattr *nl_attr(struct nlmsghdr *h, unsigned short type, const void *data, size_t len) {
  struct rtattr *rta = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
  rta->rta_type = type;
  rta->rta_len = (unsigned short)RTA_LENGTH(len);
  if (len) memcpy(RTA_DATA(rta), data, len);
  h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(rta->rta_len);
  return rta;
}

static void nl_end(struct nlmsghdr *h, struct rtattr *nest) {
  nest->rta_len = (unsigned short)((char *)h + h->nlmsg_len - (char *)nest);
}

/* Sends one rtnetlink request and returns its answer's errno (0: done). */
static int nl_talk(struct nlmsghdr *h) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return errno;
  struct sockaddr_nl to = {.nl_family = AF_NETLINK};
  int rc = EIO;
  if (sendto(fd, h, h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof to) >= 0) {
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    struct nlmsghdr *answer = (struct nlmsghdr *)buf;
    if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) && answer->nlmsg_type == NLMSG_ERROR) {
      rc = -((struct nlmsgerr *)NLMSG_DATA(answer))->error;
    }
  } else {
    rc = errno;
  }
  close(fd);
  return rc;
}

/* A veth `name` here whose peer is SESSION_IF in the namespace `peer_ns`. */
static int veth_add(const char *name, int peer_ns) {
  union nl_request req;
  memset(&req, 0, sizeof req);
  req.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
  req.header.nlmsg_type = RTM_NEWLINK;
  req.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  ((struct ifinfomsg *)NLMSG_DATA(&req.header))->ifi_family = AF_UNSPEC;
  nl_attr(&req.header, IFLA_IFNAME, name, strlen(name) + 1);
  struct rtattr *linkinfo = nl_attr(&req.header, IFLA_LINKINFO, NULL, 0);
  nl_attr(&req.header, IFLA_INFO_KIND, "veth", 4);
  struct rtattr *data = nl_attr(&req.header, IFLA_INFO_DATA, NULL, 0);
  struct rtattr *peer = nl_attr(&req.header, VETH_INFO_PEER, NULL, 0);
  req.header.nlmsg_len += NLMSG_ALIGN(sizeof(struct ifinfomsg)); /* the peer's ifinfomsg, zeroed */
  nl_attr(&req.header, IFLA_IFNAME, SESSION_IF, strlen(SESSION_IF) + 1);
  nl_attr(&req.header, IFLA_NET_NS_FD, &peer_ns, sizeof peer_ns);
  nl_end(&req.header, peer);
  nl_end(&req.header, data);
  nl_end(&req.header, linkinfo);
  return nl_talk(&req.header);
}

/* Removes the link `name` of this namespace (a veth's peer goes with it). */
static int link_del(const char *name) {
  union nl_request req;
  memset(&req, 0, sizeof req);
  req.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
  req.header.nlmsg_type = RTM_DELLINK;
  req.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  ((struct ifinfomsg *)NLMSG_DATA(&req.header))->ifi_family = AF_UNSPEC;
  nl_attr(&req.header, IFLA_IFNAME, name, strlen(name) + 1);
  int rc = nl_talk(&req.header);
  return rc == ENODEV ? 0 : rc;
}

static void sin_of(struct sockaddr *sa, uint32_t host_order) {
  struct sockaddr_in *sin = (struct sockaddr_in *)sa;
  memset(sin, 0, sizeof *sin);
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(host_order);
}

/* The link `name` up, with `address`/31 when non-zero. */
static int link_up(const char *name, uint32_t address) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
  int rc = 0;
  if (address) {
    sin_of(&ifr.ifr_addr, address);
    if (ioctl(fd, SIOCSIFADDR, &ifr) < 0) rc = -1;
    sin_of(&ifr.ifr_netmask, 0xfffffffeu);
    if (rc == 0 && ioctl(fd, SIOCSIFNETMASK, &ifr) < 0) rc = -1;
  }
  if (rc == 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) rc = -1;
  ifr.ifr_flags |= IFF_UP;
  if (rc == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) rc = -1;
  close(fd);
  return rc;
}

static int default_route(uint32_t gateway) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct rtentry rt;
  memset(&rt, 0, sizeof rt);
  sin_of(&rt.rt_dst, 0);
  sin_of(&rt.rt_genmask, 0);
  sin_of(&rt.rt_gateway, gateway);
  rt.rt_flags = RTF_UP | RTF_GATEWAY;
  rt.rt_dev = (char *)SESSION_IF;
  int rc = ioctl(fd, SIOCADDRT, &rt);
  close(fd);
  return rc;
}

/*
 * Called in the session's namespace (`session_ns`): a veth to the container's (`container_ns`),
 * addressed and routed; this process ends in the session's namespace. The pair's number starts at
 * `seed` (a pid: distinct among live sessions) and moves on while a lingering pair holds it.
 */
static void veth_setup(int container_ns, int session_ns, unsigned seed) {
  char name[IFNAMSIZ];
  int rc = EEXIST;
  unsigned pair = seed % NET_PAIRS;
  if (setns(container_ns, CLONE_NEWNET) < 0) fail(109, "cannot enter the container's network", NULL);
  for (int tries = 0; tries < 64 && rc == EEXIST; tries++, pair = (pair + 7919) % NET_PAIRS) {
    format(name, sizeof name, "bkr%u", pair);
    rc = veth_add(name, session_ns);
  }
  if (rc != 0) {
    errno = rc;
    fail(109, "cannot add a veth", name);
  }
  uint32_t outer = NET_BASE + 2 * pair;
  if (link_up(name, outer) < 0) fail(109, "cannot set up", name);
  if (setns(session_ns, CLONE_NEWNET) < 0) fail(109, "cannot enter the session's network", NULL);
  if (link_up(SESSION_IF, outer + 1) < 0 || default_route(outer) < 0) fail(109, "cannot set up", SESSION_IF);
}

/* This process (the session's waiter, before it forks the init) in the network its policy names. */
static void net_setup(const char *mode) {
  if (!strcmp(mode, "shared")) return;
  int container_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (container_ns < 0 || unshare(CLONE_NEWNET) < 0) fail(108, "cannot make a network namespace", NULL);
  if (link_up("lo", 0) < 0) fail(108, "cannot set up", "lo");
  if (!strcmp(mode, "full")) {
    int session_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (session_ns < 0) fail(108, "cannot open", "/proc/self/ns/net");
    veth_setup(container_ns, session_ns, (unsigned)getpid());
    close(session_ns);
  } else if (strcmp(mode, "none") != 0) {
    errno = EINVAL;
    fail(108, "no such network policy:", mode);
  }
  close(container_ns);
}

/* `session-init net PID MODE`: run in the container's network (a `docker exec` or its control lane). */
static int net_change(const char *target, const char *mode) {
  char path[64];
  format(path, sizeof path, "/proc/%s/ns/net", target);
  int container_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  int session_ns = open(path, O_RDONLY | O_CLOEXEC);
  if (container_ns < 0 || session_ns < 0) fail(108, "cannot open", path);
  struct stat mine, theirs;
  /* A session in its container's network has no policy of its own to change. */
  if (fstat(container_ns, &mine) < 0 || fstat(session_ns, &theirs) < 0 || mine.st_ino == theirs.st_ino) {
    errno = EINVAL;
    fail(108, "the session has no network namespace of its own:", target);
  }
  if (setns(session_ns, CLONE_NEWNET) < 0) fail(108, "cannot enter", path);
  if (!strcmp(mode, "full")) {
    /* Already full: its veth, and the connections on it, stay. */
    if (if_nametoindex(SESSION_IF) == 0) veth_setup(container_ns, session_ns, (unsigned)getpid());
    return 0;
  }
  if (strcmp(mode, "none") != 0) {
    errno = EINVAL;
    fail(108, "no such network policy:", mode);
  }
  int rc = link_del(SESSION_IF);
  if (rc != 0) {
    errno = rc;
    fail(109, "cannot remove", SESSION_IF);
  }
  return 0;
}
