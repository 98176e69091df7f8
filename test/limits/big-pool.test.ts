/**
 * `npm run test:limits`: a pool of 1,023 nodes used by one service with 4 ports and 2 external addresses on 2 load
 * balancers (4 Backends, 4 Frontends, 8 Binds and 4,092 Servers: 4,108 objects per load balancer), then a node joins
 * (test/limits/pool-at-limits.ts says what each step proves).
 */
import { poolAtLimits } from './pool-at-limits';

poolAtLimits({ label: 'big pool', nodes: 1023, ports: 4, addresses: ['203.0.113.10', '2001:db8::10'], loadBalancers: 2 });
