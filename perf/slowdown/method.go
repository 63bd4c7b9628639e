package slowdown

// Method is written into every result.
const Method = `Hosts are network namespaces: one server and C clients, each with a veth ` +
	`into a bridge in a switch namespace. The bottleneck is the switch port towards the server ` +
	`(its veth egress): tc htb with one class at the rate and under it 8 strict-priority bands ` +
	`(this kernel has no prio or ets qdisc: the bands are htb leaf classes with prio 0..7, each guaranteed ` +
	`8 kbit/s and borrowing up to the rate, which htb lends to the lowest prio first; each band a bfifo ` +
	`holding 50 ms of the rate's bytes, at least 16 full frames: a switch buffer is a time at its rate; ` +
	`buckets of one 1600-byte frame, so that each packet waits its transmission time as on a link of ` +
	`that rate); u32 filters put IPv4 TOS top-3-bits p (Homa priority p, TOS = p<<5, as ` +
	`kernel Homa) in band 7-p (band 0 first); non-IP frames (ARP) go to band 0. Offloads (TSO/GSO/GRO) ` +
	`are turned off on every veth so both transports hand the qdisc MTU-sized frames. ` +
	`Rate per workload: the one at which its highest load offers --rpc-rate RPCs/s (default 1500, what ` +
	`the daemons and the harness sustain here), at most --rate (default 200 Mb/s): W1 and W2, whose messages ` +
	`are hundreds of bytes, run at 4 and 8 Mb/s, W3 at 40, W4 and W5 at 200 (about 300 and 50 RPCs/s at 80%). ` +
	`Per workload Homa runs every load, then TCP does, through the same bottleneck. ` +
	`Homa: one homa-dpdk run daemon per namespace on net_af_packet over its eth0, fresh daemons for every ` +
	`load (one run's backlog cannot carry into the next); runtime.idle adaptive with 100 empty passes ` +
	`before a sleep of at most 100 µs (--idle-spin, --idle-max-sleep: three daemons spinning 10,000 passes ` +
	`kept both CPUs busy and starved each other), polling thread free to run on either CPU (EAL --lcores ` +
	`1@(0-1)); link_speed auto, so the senders' pacers run at the veth's 10G and the queue forms at the ` +
	`bottleneck as in a switch; protocol scaled to the link (SDProtocol: unscheduled bytes = rate x 1 ms, ` +
	`max_incoming 4 times that; RESEND after 100 ms of silence, twice a band's queue, and NEED_ACK as ` +
	`seldom: at kernel Homa's 2 ms, the ACKs of unacknowledged RPCs filled the top band of a 4 Mb/s link ` +
	`and collapsed the run; RPC timeout 5 s). This harness attaches to each client daemon 4 ` +
	`worker sessions (client.Dial; a Send waits for the daemon's answer, so the host's arrivals are dealt ` +
	`to its sessions in turn) and one server worker (port 99, answering with ReplyAsync: a burst of ` +
	`requests is answered in one pass of the daemon) to the server daemon, over their unix sockets; it ` +
	`runs with GOMAXPROCS of at least sessions + 4, so that a session woken from its blocking eventfd wait ` +
	`never waits for a P. ` +
	`TCP: the same IPv4 addresses are given to the kernel (taken away again after the workload), the server ` +
	`listens (one goroutine per connection), each client keeps a pool of TCP_NODELAY connections and uses one ` +
	`connection per outstanding RPC (an idle one from the pool, or a new one when all are busy), ` +
	`framed as a 4-byte length and the bytes (a driver thread per client sleeps in the kernel until each ` +
	`arrival, as the Homa drivers do in their eventfd wait); TOS 0, so all TCP traffic shares one band (kernel TCP ` +
	`gets no Homa priorities). ` +
	`Workload: requests of size S drawn from W_k (the CSV's length, relative frequency), 1-byte ` +
	`responses (the papers' slowdown is of one message; the response adds one small frame). ` +
	`PoissonArrivals are open-loop Poisson, the same seeded schedule for both transports, spread uniformly ` +
	`over the clients, at a rate that loads the bottleneck to the given fraction counting Homa's DATA ` +
	`frames with their Ethernet, IPv4 and Homa headers (what htb counts; no preamble/FCS). RTT is ` +
	`from just before Send/write to the response's arrival at the client worker/goroutine; only RPCs ` +
	`sent in the middle 90% of the period are sampled. ` +
	`SDUnloaded RTT: before the loaded runs of each transport and workload, RPCs of sizes at the workload's ` +
	`quantiles are sent one at a time from client 0, each after a pause that refills the bottleneck's ` +
	`bucket (median of several per size); a sample's slowdown is its ` +
	`RTT divided by the unloaded RTT at its size, interpolated linearly in log(size)-log(RTT). ` +
	`Samples are grouped in size buckets of 4 per decade; P50/P99 are nearest-rank.`

// Distortions lists what the machine does to the measurement.
const Distortions = `2 vCPUs shared by the three daemons' polling loops, the harness's ` +
	`workers and drivers, the kernel's softirq work for every veth and the qdisc, and whatever ` +
	`else runs on the machine (loadavg_before in each run). CPU contention inflates both transports' ` +
	`RTTs and shows up directly as tail latency: a daemon descheduled for milliseconds (its max pass gap) ` +
	`delays every packet it holds, and kernel TCP, which runs in softirq context, suffers less. The ` +
	`unloaded RTT is measured alone on an idle machine, so with sleeping loops (Homa ~0.4 ms for a small ` +
	`RPC: up to 100 µs to wake each idle loop on 4 crossings; TCP 0.03-0.08 ms), so Homa's slowdown ` +
	`denominators are larger than a busy-polled daemon's (3 µs in the rtt scenario) and than TCP's: ` +
	`compare the absolute RTTs too (short_messages.p99_rtt_us, printed beside the slowdowns). The ` +
	`bottleneck runs at megabits, not the papers' 10-100 Gb/s: a full packet takes ` +
	`0.3 ms at 40 Mb/s and 3 ms at 4 Mb/s, so queueing, not software, dominates the loaded RTTs, as in ` +
	`the papers; Homa's control packets (grants, RESENDs, BUSY) cost a larger share of so slow a link. ` +
	`Sends late against the Poisson schedule (late_send_fraction, ` +
	`schedule_kept) mean the offered load was not applied as drawn. The bottleneck's strict priority ` +
	`is htb's (no prio/ets qdisc in this kernel): each band is guaranteed 8 kbit/s, so a low band ` +
	`is never fully starved. Messages above 1,000,000 bytes (W3-W5) are folded into 1,000,000 (the ` +
	`worker interface's and kernel Homa's limit). Homa's DATA header (56 B) and TCP's (32 B with ` +
	`timestamps) differ: the same schedule is a slightly lower wire load for TCP. W5 offers about 500 ` +
	`RPCs per 10-s run at 80% and has no short messages; its P99s per size rest on few samples.`
