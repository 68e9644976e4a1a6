// Harness kernels, not benchmark variants.
//
// hold_stream keeps the stream busy until the host has enqueued a whole batch of timed
// samples, so no sample contains host launch latency (nvbench's blocking kernel). flags[0] is
// set by the host to release it; if that takes longer than timeout_ns it gives up and sets
// flags[1], and the harness rejects the batch.

extern "C" __global__ void hold_stream(volatile int* flags, unsigned long long timeout_ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        if (flags[0]) return;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < timeout_ns);
    flags[1] = 1;
}
