//! The state a balancer's service, its connection tasks and its updaters share: endpoint
//! slots, connectivity, the policy behind its lock, ticket completion.

use super::*;

impl Shared {
    pub(super) fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// Runs the policy's timer if it is due. Call with the core locked.
    pub(super) fn timers(core: &mut Core, now: Nanos) {
        if core.policy.next_timer().is_some_and(|t| t <= now) {
            let Core { policy, rng } = core;
            policy.on_timer(now, rng);
        }
    }

    pub(super) fn slot(&self, idx: usize) -> Option<Arc<Slot>> {
        self.slots
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(idx)
            .cloned()
    }

    pub(super) fn set_state(&self, idx: usize, state: Connectivity) {
        let Some(slot) = self.slot(idx) else { return };
        {
            let mut s = lock(&slot.state);
            // Sticky TRANSIENT_FAILURE: reconnect attempts after a failure are not reported.
            if *s == state
                || (*s == Connectivity::TransientFailure && state == Connectivity::Connecting)
            {
                return;
            }
            *s = state;
        }
        let now = self.clock.now();
        {
            let mut core = self.core();
            // Checked with the core locked: a removed endpoint's last change never reaches the
            // policy after its removal.
            if !slot.active.load(Ordering::Acquire) {
                return;
            }
            core.policy
                .on_connectivity(now, EndpointId(idx as u32), state);
            Self::timers(&mut core, now);
        }
        self.changed.notify_waiters();
    }

    pub(super) fn channel(&self, idx: usize) -> Option<Conn> {
        lock(&self.slot(idx)?.channel).clone()
    }

    /// Records that connection `generation` of endpoint `idx` served a call.
    pub(super) fn mark_served(&self, idx: usize, generation: u64) {
        if let Some(slot) = self.slot(idx) {
            slot.served.fetch_max(generation, Ordering::AcqRel);
        }
    }

    pub(super) fn mark_broken(&self, idx: usize, generation: u64, why: Option<String>) {
        let Some(slot) = self.slot(idx) else { return };
        if slot.generation.load(Ordering::Acquire) == generation {
            lock(&slot.outages).begin(self.clock.now(), why, false);
            slot.broken.notify_one();
        }
    }

    pub(super) fn complete(
        &self,
        ticket: Ticket,
        started: Nanos,
        status: Status,
        load: Option<lblab_policy::LoadReport>,
    ) {
        let now = self.clock.now();
        if load.is_some() {
            self.load_reports.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = Outcome {
            status,
            elapsed: now.saturating_sub(started),
            load,
        };
        if let Some(policy) = &self.concurrent {
            policy.on_done(now, ticket, outcome);
            return;
        }
        let mut core = self.core();
        core.policy.on_done(now, ticket, outcome);
        Self::timers(&mut core, now);
    }
}

impl Shared {
    pub(super) fn all_slots(&self) -> Vec<Arc<Slot>> {
        self.slots.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// See [`Balancer::set_endpoints`].
    pub(super) fn set_endpoints(self: &Arc<Shared>, endpoints: Vec<Uri>) -> Vec<EndpointId> {
        let mut active = Vec::with_capacity(endpoints.len());
        let mut start = Vec::new();
        {
            let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
            for uri in endpoints {
                let idx = match slots.iter().position(|s| s.uri == uri) {
                    Some(i) => i,
                    None => {
                        slots.push(Arc::new(Slot {
                            uri,
                            task: Mutex::new(None),
                            active: std::sync::atomic::AtomicBool::new(false),
                            channel: Mutex::new(None),
                            generation: AtomicU64::new(0),
                            served: AtomicU64::new(0),
                            broken: Notify::new(),
                            state: Mutex::new(Connectivity::Idle),
                            outages: Mutex::new(Outages::default()),
                            probing: std::sync::atomic::AtomicBool::new(false),
                        }));
                        slots.len() - 1
                    }
                };
                let id = EndpointId(idx as u32);
                if !active.contains(&id) {
                    active.push(id);
                }
            }
            for (idx, slot) in slots.iter().enumerate() {
                let listed = active.contains(&EndpointId(idx as u32));
                let running = lock(&slot.task).is_some();
                if listed && !running {
                    start.push((idx, slot.clone()));
                } else if !listed && running {
                    slot.active.store(false, Ordering::Release);
                    if let Some(t) = lock(&slot.task).take() {
                        t.abort();
                    }
                    lock(&slot.channel).take();
                    *lock(&slot.state) = Connectivity::Idle;
                }
            }
        }
        // The policy learns the list before any new endpoint reports a change.
        let now = self.clock.now();
        {
            let mut core = self.core();
            core.policy.set_endpoints(now, &active);
            Self::timers(&mut core, now);
        }
        for (idx, slot) in start {
            *lock(&slot.state) = Connectivity::Idle;
            slot.active.store(true, Ordering::Release);
            let rng = SmallRng::seed_from_u64(self.options.seed ^ (0x5EED_0000 + idx as u64));
            let handle = tokio::spawn(manage(self.clone(), idx, rng));
            *lock(&slot.task) = Some(handle.abort_handle());
        }
        self.changed.notify_waiters();
        active
    }
}
