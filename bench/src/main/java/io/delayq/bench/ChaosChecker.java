package io.delayq.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.delayq.bench.Nemesis.Fault;

/**
 * The chaos scenario's verdict over every delivery the receiver recorded, every job the producer
 * tried and every fault the nemesis made:
 * <ul>
 * <li><b>lost</b>: accepted (201/200) but never delivered to the end. Must be 0.</li>
 * <li><b>duplicates</b>: every delivery of a job after its first. Each is judged against the one
 * before it (by start time), so one fault explains one rerun, never two. It is explained when
 * that holder was itself faulted — killed, frozen or cut off — between the earlier delivery's
 * start and this one's ({@code holder-faulted}: its lease expired and the job was retaken), or
 * when this delivery's own replica was frozen or cut off from before the earlier delivery
 * started until at most a lease before this one ({@code stale-holder}: it held the job when it
 * stopped, the job was retaken meanwhile, and its call went out as it ran again). A Redis fault
 * explains nothing: the contract says a Redis outage duplicates no job. An unexplained duplicate
 * fails the run.</li>
 * <li><b>lateness</b>: first delivery start − runAt. A job is "during a fault" when some fault,
 * or the 2 s after it, falls between its runAt and its first start; its bound is the sum, over
 * those faults, of the fault's length + lease + 2 s. Others are "outside" (those due before the
 * nemesis starts, cold JVMs' first seconds, in a bucket of their own). Beyond-bound jobs are
 * counted and reported.</li>
 * </ul>
 */
final class ChaosChecker {
    /** One call the receiver recorded. */
    record Delivery(String id, int attempt, int replica, long start, long end, boolean answered) {
    }

    /** A job the producer tried; {@code accepted} false when no replica answered 201/200 within its retries. */
    record Job(String id, long runAt, boolean accepted) {
    }

    /** A duplicate: the delivery before it, this one, and how it was judged. */
    record Duplicate(Delivery before, Delivery delivery, String explanation) {
        boolean explained() {
            return !explanation.startsWith("unexplained");
        }
    }

    static final long RECOVERY_MS = 2000;
    private final long leaseMs;

    ChaosChecker(long leaseMs) {
        this.leaseMs = leaseMs;
    }

    /** The figures, as they go into the JSON line (plus the lists, for the report's details). */
    record Verdict(Map<String, Object> figures, List<String> lostIds, List<Duplicate> duplicates, boolean ok) {
    }

    Verdict check(List<Job> jobs, List<Delivery> deliveries, List<Fault> faults) {
        return check(jobs, deliveries, faults, Long.MIN_VALUE);
    }

    /** As {@link #check(List, List, List)}; jobs due before {@code warmUpEndMs} get a lateness bucket of their own. */
    Verdict check(List<Job> jobs, List<Delivery> deliveries, List<Fault> faults, long warmUpEndMs) {
        Map<String, List<Delivery>> byJob = new HashMap<>();
        for (Delivery d : deliveries) {
            byJob.computeIfAbsent(d.id(), k -> new ArrayList<>()).add(d);
        }
        byJob.values().forEach(l -> l.sort(Comparator.comparingLong(Delivery::start)));
        Map<String, Job> known = new HashMap<>();
        jobs.forEach(j -> known.put(j.id(), j));

        long accepted = 0, delivered = 0, notAccepted = 0, notAcceptedDelivered = 0, early = 0, beyondBound = 0;
        List<String> lost = new ArrayList<>();
        long[] outside = new long[jobs.size()];
        long[] during = new long[jobs.size()];
        long[] warm = new long[jobs.size()];
        int nOut = 0, nDuring = 0, nWarm = 0;
        long maxOverBound = Long.MIN_VALUE;
        for (Job j : jobs) {
            List<Delivery> ds = byJob.get(j.id());
            if (!j.accepted()) {
                notAccepted++;
                notAcceptedDelivered += ds == null ? 0 : 1;
                continue;
            }
            accepted++;
            if (ds == null) {
                lost.add(j.id());
                continue;
            }
            delivered++;
            long first = ds.get(0).start();
            long late = first - j.runAt();
            if (late < 0) {
                early++;
            }
            long bound = 0;
            for (Fault f : faults) {
                if (f.start() <= first && f.end() + RECOVERY_MS >= j.runAt()) {
                    bound += f.length() + leaseMs + RECOVERY_MS;
                }
            }
            if (bound == 0 && j.runAt() < warmUpEndMs) {
                warm[nWarm++] = late;
            } else if (bound == 0) {
                outside[nOut++] = late;
            } else {
                during[nDuring++] = late;
                if (late > bound) {
                    beyondBound++;
                }
                maxOverBound = Math.max(maxOverBound, late - bound);
            }
        }

        List<Duplicate> dups = new ArrayList<>();
        long jobsDuplicated = 0;
        for (List<Delivery> ds : byJob.values()) {
            if (ds.size() > 1) {
                jobsDuplicated++;
            }
            for (int k = 1; k < ds.size(); k++) {
                dups.add(new Duplicate(ds.get(k - 1), ds.get(k), explain(ds.get(k - 1), ds.get(k), faults)));
            }
        }
        dups.sort(Comparator.comparingLong(d -> d.delivery().start()));
        Map<String, Long> byExplanation = new TreeMap<>();
        dups.forEach(d -> byExplanation.merge(d.explanation(), 1L, Long::sum));
        long unexplained = dups.stream().filter(d -> !d.explained()).count();
        long unexpected = byJob.keySet().stream().filter(id -> !known.containsKey(id)).count();

        Map<String, Object> faultsByKind = new LinkedHashMap<>();
        for (String kind : Nemesis.KINDS) {
            faultsByKind.put(kind, faults.stream().filter(f -> f.kind().equals(kind)).count());
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("accepted", accepted);
        r.put("not_accepted", notAccepted);
        r.put("not_accepted_but_delivered", notAcceptedDelivered);
        r.put("delivered", delivered);
        r.put("lost", lost.size());
        r.put("deliveries", deliveries.size());
        r.put("deliveries_unanswered", deliveries.stream().filter(d -> !d.answered()).count());
        r.put("deliveries_of_unknown_ids", unexpected);
        r.put("jobs_duplicated", jobsDuplicated);
        r.put("duplicates", dups.size());
        r.put("dup_explained", dups.size() - unexplained);
        r.put("dup_unexplained", unexplained);
        r.put("dup_by_explanation", byExplanation);
        r.put("faults", faultsByKind);
        r.put("fault_s_total", Math.round(faults.stream().mapToLong(Fault::length).sum() / 100.0) / 10.0);
        r.put("late_ms_warm_up", lateness(warm, nWarm));
        r.put("late_ms_outside_faults", lateness(outside, nOut));
        r.put("late_ms_during_faults", lateness(during, nDuring));
        r.put("late_beyond_bound", beyondBound);
        r.put("late_max_over_bound_ms", nDuring == 0 ? 0 : maxOverBound);
        r.put("early", early);
        boolean ok = lost.isEmpty() && unexplained == 0 && accepted > 0 && delivered > 0;
        return new Verdict(r, lost, dups, ok);
    }

    private static Map<String, Object> lateness(long[] values, int n) {
        Map<String, Object> m = Report.latency(Stats.sorted(values, n));
        m.put("n", n);
        return m;
    }

    /**
     * Why {@code next} ran again after {@code before}, or {@code unexplained}
     * ({@code unexplained-near-redis-fault} when a Redis fault, or the lease + 2 s after it, lies between them).
     */
    String explain(Delivery before, Delivery next, List<Fault> faults) {
        for (Fault f : faults) {
            if (f.onReplica() && f.target() == before.replica() && f.start() <= next.start() && f.end() >= before.start()) {
                return "holder-faulted:" + f.kind();
            }
        }
        for (Fault f : faults) {
            if (f.onReplica() && f.target() == next.replica() && !f.kind().equals("kill") && f.start() <= before.start()
                    && f.end() <= next.start() && next.start() - f.end() <= leaseMs) {
                return "stale-holder:" + f.kind();
            }
        }
        // Named apart, still unexplained: a Redis outage must duplicate nothing, its aftermath included.
        boolean redis = faults.stream().anyMatch(f -> !f.onReplica() && f.start() <= next.start()
                && f.end() + leaseMs + RECOVERY_MS >= before.start());
        return redis ? "unexplained-near-redis-fault" : "unexplained";
    }

    /** Figures a person reads first, as a short table. */
    static void table(Map<String, Object> r) {
        System.out.printf("%-34s %s%n", "accepted / not accepted", r.get("accepted") + " / " + r.get("not_accepted"));
        System.out.printf("%-34s %s%n", "delivered / lost", r.get("delivered") + " / " + r.get("lost"));
        System.out.printf("%-34s %s (jobs %s)%n", "duplicates explained / unexplained",
                r.get("dup_explained") + " / " + r.get("dup_unexplained"), r.get("jobs_duplicated"));
        System.out.printf("%-34s %s%n", "duplicates by explanation", r.get("dup_by_explanation"));
        System.out.printf("%-34s %s (%s s in all)%n", "faults by kind", r.get("faults"), r.get("fault_s_total"));
        System.out.printf("%-34s %s%n", "late ms in the warm-up (no fault)", brief(r.get("late_ms_warm_up")));
        System.out.printf("%-34s %s%n", "late ms outside faults", brief(r.get("late_ms_outside_faults")));
        System.out.printf("%-34s %s%n", "late ms during faults", brief(r.get("late_ms_during_faults")));
        System.out.printf("%-34s %s (max over bound %s ms)%n", "late beyond fault+lease+2s", r.get("late_beyond_bound"),
                r.get("late_max_over_bound_ms"));
        if (r.containsKey("dead")) {
            System.out.printf("%-34s %s%n", "dead / left in Redis", r.get("dead") + " / " + r.get("left_in_redis"));
        }
    }

    @SuppressWarnings("unchecked")
    private static String brief(Object o) {
        Map<String, Object> m = (Map<String, Object>) o;
        return "p50 " + m.get("p50") + "  p99 " + m.get("p99") + "  max " + m.get("max") + "  (n " + m.get("n") + ")";
    }
}
