/**
 * `npm run test:limits`: the largest Kubernetes cluster, 5,000 nodes (every Node a member of the cluster's pool): a pool
 * of 4,999 nodes used by one service with one port and one external address on one load balancer (5,002 objects),
 * then the 5,000th node joins (test/limits/pool-at-limits.ts says what each step proves).
 */
import { poolAtLimits } from './pool-at-limits';

poolAtLimits({ label: 'cluster pool', nodes: 4999, ports: 1, addresses: ['203.0.113.10'], loadBalancers: 1 });
