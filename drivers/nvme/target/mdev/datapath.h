/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NVMe target vfio mediated device (mdev) transport: controller and data
 * path internals shared by regs.c, ctrl.c, sq.c, cq.c, doorbell.c, mem.c
 * and prp.c.
 *
 * Contexts and locking
 * --------------------
 * ctrl->lock (mutex, device model) serialises register writes, reset,
 * open/close and dma_unmap.  Controller enable/disable run under it.
 *
 * Every SQ (admin SQ included) has a kthread that fetches and executes its
 * commands; a trapped write to an SQ doorbell fetches them itself when
 * that thread is asleep (see doorbell.c).  Only these runners pin guest
 * memory (vfio_pin_pages()), and they never hold ctrl->lock while doing
 * so: dma_unmap runs under it and waits for them.  Neither VFIO backend
 * calls dma_unmap under, or while another thread waits under, the lock
 * vfio_pin_pages() takes (type1 takes its device_list_lock, held across
 * dma_unmap, only without its iommu->lock; iommufd holds no lock), so a
 * runner may pin while an unmap waits for it.  What dma_unmap needs on
 * return is that no runner still uses the range and that every command
 * holding guest pages has completed.  The pause protocol (pause_count,
 * sq->paused, NVMET_MDEV_SQ_RUNNING, then the inflight drain) gives that,
 * between two commands, with no lock held across a burst; it also lets
 * the admin SQ's runner stop the others (Doorbell Buffer Config, bus
 * mastering).  An rw_semaphore whose read side covers a burst would serve
 * dma_unmap as well, not the drain.
 *
 * dp->qlock (mutex) serialises creation and deletion of queues (admin
 * commands, enable/disable); the queue arrays are read under RCU.
 *
 * cq->lock (spinlock, irqsave) protects a CQ's tail, phase, parked list
 * and coalescing state; completions are posted from any context
 * (process, softirq, hardirq).
 *
 * Lock order: ctrl->lock -> dp->qlock -> tctrl->lock / nvmet locks;
 * cq->lock is innermost (only irq signalling is called under it).
 */
#ifndef _NVMET_MDEV_DATAPATH_H
#define _NVMET_MDEV_DATAPATH_H

#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/llist.h>
#include <linux/scatterlist.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "priv.h"

/* Pin cache granule: one page of struct page pointers, 2 MiB with 4K pages. */
#define NVMET_MDEV_CHUNK_PAGES	(PAGE_SIZE / sizeof(struct page *))
#define NVMET_MDEV_CHUNK_SHIFT	(PAGE_SHIFT + ilog2(NVMET_MDEV_CHUNK_PAGES))

/* Scatterlist entries embedded in each command; more come from sg pools. */
#define NVMET_MDEV_INLINE_SG	8

/* Data Block descriptors per command, and segments. */
#define NVMET_MDEV_MAX_SGL_DESCS	256

/* Commands in flight per admin SQ; the guest may queue more, we wait. */
#define NVMET_MDEV_ADMIN_IODS	32

/* Commands fetched from one SQ before the thread checks for other work. */
#define NVMET_MDEV_SQ_BURST	64

/*
 * sq->state: RUNNING is held by the context fetching from the SQ (its
 * thread while awake, or a trapped doorbell write, see doorbell.c), which
 * owns the fields marked "runner private"; DEAD: the SQ is being deleted.
 */
#define NVMET_MDEV_SQ_RUNNING	0
#define NVMET_MDEV_SQ_DEAD	1

/* bad_tail, bad_head: no invalid doorbell value (any u32 may be one). */
#define NVMET_MDEV_DB_VALID	U64_MAX

/* Asynchronous event information for Error status events (NVMe 2.0). */
#define NVMET_MDEV_AER_INVALID_DB_REG	0x00
#define NVMET_MDEV_AER_INVALID_DB_VALUE	0x01

/**
 * struct nvmet_mdev_gmap - guest memory mapped into kernel virtual space
 * @ctrl: the controller whose pins hold the pages
 * @vaddr: kernel address of @iova
 * @vbase: address returned by vmap(), NULL when not mapped
 * @iova: guest I/O virtual address of the buffer
 * @last: its last byte (inclusive: a buffer may end at the top of the
 *	IOVA space)
 *
 * The pages are pinned by the mapping itself (nvmet_mdev_gmap()).
 */
struct nvmet_mdev_gmap {
	struct nvmet_mdev_ctrl	*ctrl;
	void			*vaddr;
	void			*vbase;
	u64			iova;
	u64			last;
};

/**
 * struct nvmet_mdev_iod - one command in flight
 * @req: the nvmet request
 * @cmd: private copy of the submission queue entry
 * @cqe: completion entry filled by nvmet
 * @sq: the submission queue the command came from
 * @free_node: entry in the SQ's free list
 * @parked: entry in the CQ's list of completions waiting for room
 * @sgt: scatterlist over the guest data pages
 * @has_data: @sgt holds data pages, counted in @sq->inflight
 * @sgl: first scatterlist entries, embedded
 */
struct nvmet_mdev_iod {
	struct nvmet_req	req;
	struct nvme_command	cmd;
	struct nvme_completion	cqe;
	struct nvmet_mdev_sq	*sq;
	union {
		struct llist_node	free_node;
		struct list_head	parked;
	};
	struct sg_table		sgt;
	bool			has_data;
	struct scatterlist	sgl[NVMET_MDEV_INLINE_SG];
};

struct nvmet_mdev_cq {
	struct nvmet_cq		nvme_cq;
	struct nvmet_mdev_ctrl	*ctrl;
	struct nvmet_mdev_gmap	ring;
	u64			iova;
	u16			qid;
	u16			size;		/* entries */
	u16			vector;
	bool			irq_enabled;

	spinlock_t		lock;		/* the fields below */
	struct nvme_completion	*cqes;		/* NULL: not mapped (yet) */
	u16			tail;
	u16			head;		/* last valid head doorbell */
	u64			bad_head;	/* invalid head reported */
	bool			phase;
	bool			dead;		/* ring gone: drop completions */
	struct list_head	parked;		/* iods whose CQE did not fit */
	u8			nr_coalesced;
	struct hrtimer		coalesce_timer;
	/* moderation of trapped doorbells' interrupts, see cq.c */
	bool			moderate;
	bool			streaming;	/* submits with completions held */
	bool			deferred;	/* EventIdx left ahead, timer armed */
	u8			probe_shift;	/* probe every 2^n traps */
	u16			probe_wait;	/* traps until the next probe */
	u8			hold;		/* signal once this many held */
	bool			growing;	/* @hold doubled, to be confirmed */
	u8			grow_shift;	/* double it every 2^n full rounds */
	u16			grow_wait;	/* full rounds until the next try */
	u32			trap_gap;	/* ns between traps, average */
	u64			last_trap;	/* local_clock() */
	struct rcu_head		rcu;
};

struct nvmet_mdev_sq {
	struct nvmet_sq		nvme_sq;
	struct nvmet_mdev_ctrl	*ctrl;
	struct nvmet_mdev_dp	*dp;
	struct nvmet_mdev_cq	*cq;
	struct nvmet_mdev_gmap	ring;
	u64			iova;
	struct nvme_command	*sqes;		/* NULL: not mapped (yet) */
	u16			qid;
	u16			size;		/* entries */
	u16			head;		/* next entry to fetch */
	u64			bad_tail;	/* invalid tail reported */
	bool			broken;		/* stop fetching */

	unsigned long		state;		/* NVMET_MDEV_SQ_* bits */
	struct task_struct	*thread;
	struct delayed_work	stop_work;	/* see nvmet_mdev_sq_stop() */
	wait_queue_head_t	wq;
	bool			kicked;
	bool			asleep;		/* set under dp->pause_lock */
	bool			paused;		/* dp->pause_lock */
	u64			watch_until;	/* local_clock(), admin SQ */
	u64			watch_ns;	/* its last window, admin SQ */
	u32			watch_digest;	/* of the doorbells at that fault */
	bool			watch_polled;	/* it woke a polled queue's thread */
	unsigned long		remap_since;	/* jiffies | 1, runner private */
	bool			starved;	/* waiting for a free iod */

	atomic_t		inflight;	/* commands holding data pages */
	atomic_t		busy;		/* commands fetched, not completed */
	struct nvme_sgl_desc	*sgl_descs;	/* runner private, SGL parsing */
	struct nvmet_mdev_iod	*iods;
	unsigned int		nr_iods;
	struct llist_head	free_iods;	/* returned from any context */
	struct llist_node	*free_local;	/* runner private */
	struct rcu_head		rcu;
};

/* Controller state of the data path. */
struct nvmet_mdev_dp {
	struct nvmet_mdev_ctrl	*ctrl;
	struct mutex		qlock;		/* queue creation/deletion */
	struct nvmet_mdev_sq __rcu *sqs[NVMET_MDEV_MAX_IO_QUEUES + 1];
	struct nvmet_mdev_cq __rcu *cqs[NVMET_MDEV_MAX_IO_QUEUES + 1];
	u16			nr_io_queues;	/* as of enable */
	u16			mqes;		/* CAP.MQES */
	u8			mdts;		/* as reported in Identify */
	size_t			max_xfer;	/* bytes, from mdts */

	/* pausing queue threads: dma_unmap, Doorbell Buffer Config */
	spinlock_t		pause_lock;
	unsigned int		pause_count;
	/* queue threads running and asleep (pause_lock) */
	unsigned int		nr_threads;
	unsigned int		nr_asleep;
	wait_queue_head_t	pause_wq;

	/* pin cache: chunk index -> page array, tagged 1 if fully pinned */
	struct xarray		pins;
	/* bit 0: a pin failed for want of memory, said since open (mem.c) */
	unsigned long		pin_warned;

	/* shadow doorbells; sdb/eidx NULL when not configured */
	struct nvmet_mdev_gmap	dbbuf_db;
	struct nvmet_mdev_gmap	dbbuf_ei;
	__le32			*sdb;
	__le32			*eidx;

	/* features */
	DECLARE_BITMAP(vec_cd, NVMET_MDEV_MAX_VECTORS);

	struct work_struct	delete_work;	/* ops->delete_ctrl */
};

/* ctrl.c */
int nvmet_mdev_ctrl_create(struct nvmet_mdev_ctrl *ctrl);
int nvmet_mdev_ctrl_enable(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_ctrl_disable(struct nvmet_mdev_ctrl *ctrl, bool shutdown);

/* regs.c */
void nvmet_mdev_regs_reset(struct nvmet_mdev_ctrl *ctrl, bool admin_queue);
int nvmet_mdev_regs_restore(struct nvmet_mdev_ctrl *ctrl,
			    const struct nvmet_mdev_regs *r);

static inline void nvmet_mdev_csts_set(struct nvmet_mdev_ctrl *ctrl, u32 set,
				       u32 clear)
{
	u32 old = READ_ONCE(ctrl->regs.csts);

	while (!try_cmpxchg(&ctrl->regs.csts, &old, (old & ~clear) | set))
		;
}

/**
 * nvmet_mdev_ctrl_fatal() - report a controller fatal status (CSTS.CFS)
 * @ctrl: the controller; any context
 *
 * The host is expected to reset the controller.
 */
static inline void nvmet_mdev_ctrl_fatal(struct nvmet_mdev_ctrl *ctrl)
{
	nvmet_mdev_csts_set(ctrl, NVME_CSTS_CFS, 0);
}

/*
 * The guest sizes its queues (an SQ has a command context per entry), and
 * their memory is charged to the memory cgroup of the device's opener (see
 * nvmet_mdev_sq_thread()).  Beyond the group's limit Create I/O SQ or CQ
 * fails with Internal Error, which a host survives with fewer queues,
 * rather than the group's OOM killer picking a victim (the VMM) for the
 * guest's request; and a guest cannot fill the log with failed allocations.
 */
#define NVMET_MDEV_GFP_QUEUE	\
	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/* sq.c */
u16 nvmet_mdev_create_sq(struct nvmet_ctrl *tctrl, u16 sqid, u16 cqid,
			 u16 flags, u16 qsize, u64 prp1);
u16 nvmet_mdev_delete_sq(struct nvmet_ctrl *tctrl, u16 sqid);
int nvmet_mdev_start_admin(struct nvmet_mdev_ctrl *ctrl);
struct nvmet_mdev_sq *nvmet_mdev_restore_sq(struct nvmet_mdev_ctrl *ctrl,
					    u16 qid, u16 cqid, u16 size,
					    u64 iova, u16 head);
int nvmet_mdev_start_threads(struct nvmet_mdev_ctrl *ctrl);
int nvmet_mdev_resubmit(struct nvmet_mdev_sq *sq, const struct nvme_command *cmd);
int nvmet_mdev_repark(struct nvmet_mdev_sq *sq, const struct nvme_completion *cqe);
bool nvmet_mdev_quiet(struct nvmet_mdev_ctrl *ctrl);
unsigned int nvmet_mdev_busy(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_stop_queues(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_pause(struct nvmet_mdev_ctrl *ctrl, struct nvmet_mdev_sq *self);
void nvmet_mdev_resume(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_unmap_queues(struct nvmet_mdev_ctrl *ctrl, u64 first, u64 last);
int nvmet_mdev_sq_process(struct nvmet_mdev_sq *sq, bool thread);
bool nvmet_mdev_sq_has_work(struct nvmet_mdev_sq *sq);
void nvmet_mdev_iod_put(struct nvmet_mdev_iod *iod);
bool nvmet_mdev_remap_later(struct nvmet_mdev_sq *sq, bool grace);
void nvmet_mdev_queue_nomem(struct nvmet_mdev_ctrl *ctrl, const char *what,
			    u16 qid, u32 entries);

/* cq.c */
u16 nvmet_mdev_create_cq(struct nvmet_ctrl *tctrl, u16 cqid, u16 flags,
			 u16 qsize, u64 prp1, u16 vector);
u16 nvmet_mdev_delete_cq(struct nvmet_ctrl *tctrl, u16 cqid);
void nvmet_mdev_queue_response(struct nvmet_req *req);
struct nvmet_mdev_cq *nvmet_mdev_cq_alloc(struct nvmet_mdev_ctrl *ctrl,
					  u16 qid, u16 size, u64 iova,
					  u16 vector, bool irq_enabled);
void nvmet_mdev_cq_free(struct nvmet_mdev_ctrl *ctrl, struct nvmet_mdev_cq *cq);
struct nvmet_mdev_cq *nvmet_mdev_restore_cq(struct nvmet_mdev_ctrl *ctrl,
					    u16 qid, u16 size, u64 iova,
					    u16 vector, bool irq_enabled,
					    u16 tail, u16 head, bool phase);
void nvmet_mdev_cq_quiesce(struct nvmet_mdev_cq *cq);
int nvmet_mdev_cq_remap(struct nvmet_mdev_sq *sq, bool grace);
void nvmet_mdev_cq_retry(struct nvmet_mdev_sq *sq);
void nvmet_mdev_cq_trapped(struct nvmet_mdev_cq *cq);
void nvmet_mdev_sq_trap_next(struct nvmet_mdev_sq *sq);

/* doorbell.c */
void nvmet_mdev_db_write(struct nvmet_mdev_ctrl *ctrl, u32 off, u32 val);
void nvmet_mdev_db_reset(struct nvmet_mdev_ctrl *ctrl, unsigned int idx);
bool nvmet_mdev_db_changed(struct nvmet_mdev_ctrl *ctrl, unsigned int idx,
			   u16 cur, u64 bad);
void nvmet_mdev_bad_db(struct nvmet_mdev_ctrl *ctrl, u16 qid, u32 val);
void nvmet_mdev_sq_kick(struct nvmet_mdev_sq *sq);
void nvmet_mdev_kick_all(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_wake_sleepers(struct nvmet_mdev_sq *self);
bool nvmet_mdev_watch_done(struct nvmet_mdev_sq *sq);
void nvmet_mdev_sq_sleep(struct nvmet_mdev_sq *sq);
void nvmet_mdev_sq_unlock(struct nvmet_mdev_sq *sq);
void nvmet_mdev_sq_thread_lock(struct nvmet_mdev_sq *sq);
u16 nvmet_mdev_set_dbbuf(struct nvmet_ctrl *tctrl, u64 prp1, u64 prp2);
void nvmet_mdev_dbbuf_clear(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_dbbuf_sync(void);
void nvmet_mdev_dbbuf_unmap(struct nvmet_mdev_ctrl *ctrl, u64 first, u64 last);
int nvmet_mdev_dbbuf_restore(struct nvmet_mdev_ctrl *ctrl, u64 db, u64 ei);

/* mem.c */
int nvmet_mdev_pin_page(struct nvmet_mdev_ctrl *ctrl, u64 iova,
			struct page **page);
int nvmet_mdev_gmap(struct nvmet_mdev_ctrl *ctrl, u64 iova, size_t len,
		    struct nvmet_mdev_gmap *map);
void nvmet_mdev_gunmap(struct nvmet_mdev_gmap *map);
int nvmet_mdev_read_guest(struct nvmet_mdev_ctrl *ctrl, u64 iova, void *buf,
			  size_t len);
void nvmet_mdev_unpin_range(struct nvmet_mdev_ctrl *ctrl, u64 first, u64 last);
void nvmet_mdev_unpin_all(struct nvmet_mdev_ctrl *ctrl);

/* Whether a mapping overlaps [first, last] (inclusive ends: no wrap). */
static inline bool nvmet_mdev_gmap_overlaps(const struct nvmet_mdev_gmap *map,
					    u64 first, u64 last)
{
	return map->vbase && first <= map->last && map->iova <= last;
}

/* prp.c */
u16 nvmet_mdev_map_data(struct nvmet_mdev_iod *iod, size_t len);
void nvmet_mdev_unmap_data(struct nvmet_mdev_iod *iod);

/* Doorbell slots, CAP.DSTRD = 0 */
static inline unsigned int nvmet_mdev_sq_db_idx(u16 qid)
{
	return 2 * qid;
}

static inline unsigned int nvmet_mdev_cq_db_idx(u16 qid)
{
	return 2 * qid + 1;
}

/* Whether doorbell slot @idx is an I/O queue's (not the admin queue's). */
static inline bool nvmet_mdev_db_is_io(unsigned int idx)
{
	return idx >= nvmet_mdev_sq_db_idx(1);
}

/*
 * Current value of a doorbell: the shadow doorbell of an I/O queue when the
 * host configured Doorbell Buffer Config, else the BAR0 doorbell page.
 * The Linux host only uses shadow doorbells for I/O queues, so the admin
 * queue is always read from BAR0 (its EventIdx makes hosts that do use
 * them for the admin queue write BAR0 too).
 */
static inline u32 nvmet_mdev_db_read(struct nvmet_mdev_ctrl *ctrl,
				     unsigned int idx)
{
	__le32 *sdb = READ_ONCE(ctrl->dp->sdb);

	if (sdb && nvmet_mdev_db_is_io(idx))
		return le32_to_cpu(READ_ONCE(sdb[idx]));
	return le32_to_cpu(READ_ONCE(ctrl->db[idx]));
}

static inline void nvmet_mdev_eventidx_write(struct nvmet_mdev_ctrl *ctrl,
					     unsigned int idx, u32 val)
{
	__le32 *eidx = READ_ONCE(ctrl->dp->eidx);

	if (eidx && nvmet_mdev_bus_master(ctrl)) {
		WRITE_ONCE(eidx[idx], cpu_to_le32(val));
		nvmet_mdev_dirty_mark(ctrl, ctrl->dp->dbbuf_ei.iova +
				      idx * sizeof(*eidx), sizeof(*eidx));
	}
}

#endif /* _NVMET_MDEV_DATAPATH_H */
