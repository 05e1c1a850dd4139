/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NVMe target vfio mediated device (mdev) transport: private definitions
 * shared by the files of the driver.
 *
 * Files and concerns:
 *   main.c     module init/exit, nvmet transport registration
 *   port.c     one mdev parent (and its mdev type) per nvmet port
 *   vfio.c     mdev probe/remove, vfio_device_ops, regions
 *   params.c   the per-mdev tunables (sysfs) and the type's description
 *   pci.c      PCI configuration space emulation (PM, MSI-X, PCIe + FLR)
 *   irq.c      VFIO_DEVICE_SET_IRQS: MSI-X / INTx / REQ eventfds
 *   regs.c     BAR0 controller registers, CC/CSTS state machine
 *   ctrl.c     controller enable/disable/reset, nvmet controller, ops table,
 *              what a guest memory unmap does to queues and pins
 *   sq.c       SQs and their kthreads, fetching commands, pausing, queue
 *              creation and deletion
 *   cq.c       CQs, completion posting, interrupt moderation and coalescing
 *   doorbell.c the doorbell page (mmap, zap, fault), trapped doorbell
 *              writes, the threads' sleep and wake-up protocol, shadow
 *              doorbells (Doorbell Buffer Config) and EventIdx
 *   mem.c      guest memory: pin cache, ring and buffer mappings (it calls
 *              no other file: ctrl.c handles dma_unmap)
 *   prp.c      PRP and SGL translation into scatterlists over guest pages
 *   migration.c live migration: the VFIO migration protocol, the device
 *              model's part of the state
 *   state.c    the controller's state a migration carries
 *   dirty.c    dirty page logging (vfio_log_ops): the guest pages written
 *   debugfs.c  per-mdev event counters
 *   model.h    the device model a guest sees (IDs, BARs) and the limits
 *
 * Layers: each file calls into its own layer and the ones below, never up.
 *   device model  vfio.c, pci.c, params.c, migration.c
 *   controller    regs.c, ctrl.c, state.c
 *   data path     doorbell.c, sq.c, cq.c, prp.c
 *   guest memory  mem.c, dirty.c
 * irq.c (interrupt signalling), port.c and debugfs.c call none of these;
 * the data path reports a controller fatal status by setting CSTS.CFS
 * (datapath.h), and guest memory knows nothing of what uses it.
 */
#ifndef _NVMET_MDEV_PRIV_H
#define _NVMET_MDEV_PRIV_H

#include <linux/bitfield.h>
#include <linux/mdev.h>
#include <linux/mutex.h>
#include <linux/nvme.h>
#include <linux/pci_regs.h>
#include <linux/rcupdate.h>
#include <linux/percpu.h>
#include <linux/vfio.h>
#include <linux/xarray.h>

#include "nvmet.h"
#include "model.h"

struct nvmet_mdev_ctrl;
struct nvmet_mdev_dirty;
struct nvmet_mdev_mig;
struct nvmet_mdev_sq;
struct nvmet_mdev_cq;
struct nvmet_mdev_dp;

/* The memory page size: CAP.MPSMIN = CAP.MPSMAX = 0, so CC.MPS is 4 KiB. */
#define NVMET_MDEV_MPS		SZ_4K

/* Admin Queue Attributes: the queue sizes, 0's based. */
#define NVMET_MDEV_AQA_ASQS	GENMASK(11, 0)
#define NVMET_MDEV_AQA_ACQS	GENMASK(27, 16)

/* ------------------------------------------------------------------ */
/* port.c: one mdev parent per nvmet port with addr_trtype "mdev"      */

struct nvmet_mdev_port {
	struct nvmet_port	*nport;
	struct device		dev;		/* the mdev parent device */
	struct mdev_parent	parent;
	struct mdev_type	type;
	struct mdev_type	*types[1];
	struct list_head	entry;		/* in nvmet_mdev_dying_ports */
	u16			portid;
	bool			dying;		/* remove_port() has begun */
	struct work_struct	remove_work;	/* tears the parent down */
	struct completion	removed;
};

/*
 * Resolve which subsystem NQN a controller of this port connects to:
 * @want if non-empty, else the only subsystem linked to the port.
 * Copies the NQN into @nqn (NVMF_NQN_SIZE + 1 bytes).  Returns -ENODEV once
 * the port is being disabled (nvmet holds its config lock for write then,
 * until every mdev is closed: do not call nvmet_alloc_ctrl() after that).
 */
int nvmet_mdev_port_subsysnqn(struct nvmet_mdev_port *port, const char *want,
			      char *nqn);

/* The vfio regions: the index in the top bits of the file offset. */
#define NVMET_MDEV_REGION_SHIFT		40
#define NVMET_MDEV_REGION_OFFSET(i)	((u64)(i) << NVMET_MDEV_REGION_SHIFT)
#define NVMET_MDEV_REGION_MASK		(NVMET_MDEV_REGION_OFFSET(1) - 1)

/* The doorbell page can only be mmapped where it is a whole page. */
#define NVMET_MDEV_DB_MMAP	(NVMET_MDEV_DB_SIZE / PAGE_SIZE == 1 && \
				 IS_ALIGNED(NVME_REG_DBS, PAGE_SIZE))

extern struct mdev_driver nvmet_mdev_driver;	/* vfio.c */
/* The class of the mdev parent devices; main.c calls these at init/exit. */
int nvmet_mdev_port_init(void);
void nvmet_mdev_port_exit(void);

/* ------------------------------------------------------------------ */
/* Per-mdev tunables: sysfs attributes, writable while not open.      */

/*
 * Whether the VMM may mmap the doorbell page.  Mapped, the guest rings the
 * doorbells without exits and queue threads poll them, which pays off when
 * they have a CPU of their own; trapped, each write exits to the VMM and
 * the writing vCPU thread fetches the new commands itself.  Auto: mapped
 * if the opener may run on more than one CPU.
 */
enum nvmet_mdev_db_mmap {
	NVMET_MDEV_DB_MMAP_AUTO,
	NVMET_MDEV_DB_MMAP_OFF,
	NVMET_MDEV_DB_MMAP_ON,
};

/* The per-mdev tunables (params.c); ranges and defaults are there. */
struct nvmet_mdev_params {
	u32	nr_io_queues;		/* I/O SQ/CQ pairs */
	u32	max_queue_entries;	/* CAP.MQES + 1 */
	u32	mdts;			/* Identify MDTS (2^n pages) */
	u32	poll_idle_us;		/* spin this long after the last command */
	bool	shadow_doorbells;	/* advertise Doorbell Buffer Config */
	u8	doorbell_mmap;		/* NVMET_MDEV_DB_MMAP_* */
	char	subsysnqn[NVMF_NQN_SIZE + 1];	/* empty: the port's only subsystem */
	/* The host the controller is for; empty / null: from the mdev's UUID */
	char	hostnqn[NVMF_NQN_SIZE + 1];
	uuid_t	hostid;
};

extern const struct attribute_group *nvmet_mdev_attr_groups[];
void nvmet_mdev_params_init(struct nvmet_mdev_params *p);
/* The host NQN and ID the controller connects with; ctrl->lock held. */
void nvmet_mdev_host_identity(struct nvmet_mdev_ctrl *ctrl);
ssize_t nvmet_mdev_params_describe(struct mdev_type *mtype, char *buf);

/* ------------------------------------------------------------------ */
/* pci.c: PCI configuration space                                      */

struct nvmet_mdev_pci {
	u8	cfg[NVMET_MDEV_CFG_SIZE];	/* current contents */
	u8	wmask[NVMET_MDEV_CFG_SIZE];	/* guest-writable bits */
};

/* Reset the config space to its power-on state; ctrl->lock held or probe. */
void nvmet_mdev_pci_init(struct nvmet_mdev_ctrl *ctrl);
/* Any offset and length within NVMET_MDEV_CFG_SIZE; ctrl->lock held. */
void nvmet_mdev_pci_read(struct nvmet_mdev_ctrl *ctrl, u32 off, void *buf,
			 u32 count);
void nvmet_mdev_pci_write(struct nvmet_mdev_ctrl *ctrl, u32 off,
			  const void *buf, u32 count);

/* ------------------------------------------------------------------ */
/* irq.c: interrupts, as wired by VFIO_DEVICE_SET_IRQS                 */

struct nvmet_mdev_irqs {
	spinlock_t		lock;		/* protects the eventfd pointers */
	int			mode;		/* VFIO_PCI_{INTX,MSIX}_IRQ_INDEX or -1 */
	struct eventfd_ctx	*msix[NVMET_MDEV_MAX_VECTORS];
	/* raised while bus mastering was off */
	DECLARE_BITMAP(msix_held, NVMET_MDEV_MAX_VECTORS);
	struct eventfd_ctx	*intx;
	bool			intx_masked;
	bool			intx_pending;	/* raised while masked */
	struct virqfd		*intx_unmask;	/* resample eventfd */
	struct eventfd_ctx	*err;		/* never signalled */
	struct eventfd_ctx	*req;		/* unplug request */
};

void nvmet_mdev_irq_init(struct nvmet_mdev_ctrl *ctrl);
/* Number of vectors of VFIO IRQ index @index; ctrl->lock held. */
u32 nvmet_mdev_irq_count(struct nvmet_mdev_ctrl *ctrl, u32 index);
long nvmet_mdev_set_irqs(struct nvmet_mdev_ctrl *ctrl, unsigned long arg);
/* Drop every eventfd (close_device); ctrl->lock held. */
void nvmet_mdev_irq_release_all(struct nvmet_mdev_ctrl *ctrl);
/* Signal the unplug request eventfd; returns false if there is none. */
bool nvmet_mdev_irq_request(struct nvmet_mdev_ctrl *ctrl);
/* INTMC cleared the INTx mask: re-raise a pending INTx; any context. */
void nvmet_mdev_irq_unmasked(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_irq_flush_held(struct nvmet_mdev_ctrl *ctrl, bool send);
/* Interrupts held by a stopped device, for a migration. */
bool nvmet_mdev_irq_get_held(struct nvmet_mdev_ctrl *ctrl, unsigned long *held);
void nvmet_mdev_irq_set_held(struct nvmet_mdev_ctrl *ctrl,
			     const unsigned long *held, bool intx);

/* ------------------------------------------------------------------ */
/* migration.c: the VFIO migration protocol                            */

int nvmet_mdev_mig_init(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_mig_uninit(struct nvmet_mdev_ctrl *ctrl);
/* Back to RUNNING, ending the migration files; ctrl->lock held. */
void nvmet_mdev_mig_reset(struct nvmet_mdev_ctrl *ctrl);

/* ------------------------------------------------------------------ */
/* debugfs.c: event counters                                           */

enum nvmet_mdev_stat {
	NVMET_MDEV_STAT_COMMANDS,		/* SQ entries fetched */
	NVMET_MDEV_STAT_SHADOW_COMMANDS,	/* ... of them via a shadow doorbell */
	NVMET_MDEV_STAT_TRAPPED_WRITES,		/* doorbell writes the VMM trapped */
	NVMET_MDEV_STAT_TRAP_COMMANDS,		/* SQ entries fetched by them */
	NVMET_MDEV_STAT_IRQS,			/* interrupts signalled */
	NVMET_MDEV_STAT_ENABLES,		/* CSTS.RDY set */
	NVMET_MDEV_STAT_SHUTDOWNS,		/* CSTS.SHST complete set */
	NVMET_MDEV_STAT_PROBES,			/* traps that held completions */
	NVMET_MDEV_STAT_PROBES_FAILED,		/* ... and the guest waited */
	NVMET_MDEV_STAT_DEFERRED_TRAPS,		/* traps leaving EventIdx ahead */
	NVMET_MDEV_STAT_HOLD_TIMEOUTS,		/* moderation ended by the timer */
	NVMET_MDEV_STAT_DB_FAULTS,		/* faults on the zapped db page */
	NVMET_MDEV_STAT_COMPLETIONS,		/* CQ entries posted */
	NVMET_MDEV_STAT_SLEEPS,			/* queue threads gone to sleep */
	NVMET_MDEV_STAT_WAKEUPS,		/* ... and kicked awake */
	NVMET_MDEV_STAT_PIN_HITS,		/* guest pages found pinned */
	NVMET_MDEV_STAT_PIN_MISSES,		/* ... and pinned by vfio */
	NVMET_MDEV_STAT_DIRTY_PAGES,		/* pages a dirty log report gave */
	NVMET_MDEV_STAT_STOP_BUSY,		/* commands a stop waited for */
	NVMET_MDEV_NR_STATS
};

struct nvmet_mdev_stats {
	unsigned long	val[NVMET_MDEV_NR_STATS];
};

void nvmet_mdev_stats_reset(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_debugfs_add(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_debugfs_remove(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_debugfs_init(void);
void nvmet_mdev_debugfs_exit(void);

/* ------------------------------------------------------------------ */
/* The controller: one per mdev                                        */

struct nvmet_mdev_ctrl {
	struct vfio_device	vdev;		/* must be first */
	struct mdev_device	*mdev;
	struct nvmet_mdev_port	*port;

	/*
	 * Serialises everything the device's user does outside the data
	 * path: register and config space accesses, ioctls, open/close,
	 * sysfs writes, dma_unmap.
	 */
	struct mutex		lock;
	bool			open;
	/*
	 * While open: the opener (the VMM) and its memory cgroup.  The
	 * queue threads join the opener's cgroups and charge the memory
	 * the guest makes them allocate to its memcg (as vhost workers).
	 */
	struct task_struct	*owner;
	struct mem_cgroup	*memcg;

	struct nvmet_mdev_params params;
	bool			db_mmap;	/* as decided at open */
	/* The host identity in use, from the tunables (see params.c). */
	/*
	 * Stopped for a migration (migration.c): no DMA and no interrupts,
	 * as with bus mastering off.  Written under the lock, read anywhere.
	 */
	bool			stopped;
	struct nvmet_mdev_mig	*mig;		/* migration.c, under the lock */
	char			hostnqn[NVMF_NQN_SIZE + 1];
	uuid_t			hostid;

	/* device model (pci.c, irq.c, vfio.c) */
	struct nvmet_mdev_pci	pci;
	struct nvmet_mdev_irqs	irqs;

	/* controller (regs.c, ctrl.c, sq.c, cq.c, doorbell.c, mem.c, prp.c) */
	struct nvmet_ctrl	*tctrl;		/* NULL while CC.EN = 0 */
	struct page		*db_page;	/* BAR0 doorbells, mmap-able */
	__le32			*db;		/* page_address(db_page) */
	struct nvmet_mdev_regs {
		u64	cap;
		u32	vs;
		u32	intms;		/* INTMS/INTMC mask, for INTx */
		u32	cc;
		u32	csts;		/* also set by queue threads: atomic */
		u32	aqa;
		u64	asq;
		u64	acq;
	} regs;
	/* queues, pins, shadow doorbells: see datapath.h */
	struct nvmet_mdev_dp	*dp;

	/* dirty page logging (dirty.c): the log, set and freed under the lock */
	struct mutex		dirty_lock;
	struct nvmet_mdev_dirty __rcu *dirty;

	struct nvmet_mdev_stats __percpu *stats;	/* debugfs.c */
	struct dentry		*debugfs;
};

/* Count @n events of kind @stat; any context. */
static inline void nvmet_mdev_stat_add(struct nvmet_mdev_ctrl *ctrl,
				       enum nvmet_mdev_stat stat,
				       unsigned long n)
{
	this_cpu_add(ctrl->stats->val[stat], n);
}

/*
 * PCI_COMMAND Bus Master Enable, and not stopped for a migration: the
 * function may read and write the guest's memory and send MSI-X messages.
 * Any context.
 */
static inline bool nvmet_mdev_bus_master(struct nvmet_mdev_ctrl *ctrl)
{
	return (READ_ONCE(ctrl->pci.cfg[PCI_COMMAND]) & PCI_COMMAND_MASTER) &&
		!READ_ONCE(ctrl->stopped);
}

static inline struct nvmet_mdev_ctrl *vdev_to_ctrl(struct vfio_device *vdev)
{
	return container_of(vdev, struct nvmet_mdev_ctrl, vdev);
}

/* ------------------------------------------------------------------ */
/* dirty.c: dirty page logging                                         */

extern const struct vfio_log_ops nvmet_mdev_log_ops;
/* Stop logging, free the log (vfio_log_ops.log_stop, and at close). */
int nvmet_mdev_log_stop(struct vfio_device *vdev);
void __nvmet_mdev_dirty_mark(struct nvmet_mdev_ctrl *ctrl, u64 iova, u64 len);

/*
 * The device wrote guest memory [@iova, @iova + @len): log it for a
 * migration, if one logs.  Any context, after the write.
 */
static inline void nvmet_mdev_dirty_mark(struct nvmet_mdev_ctrl *ctrl,
					 u64 iova, u64 len)
{
	if (unlikely(rcu_access_pointer(ctrl->dirty)))
		__nvmet_mdev_dirty_mark(ctrl, iova, len);
}

/* ------------------------------------------------------------------ */
/* Calls from the device model (vfio.c, pci.c) into the controller.    */

int nvmet_mdev_ctrl_init(struct nvmet_mdev_ctrl *ctrl);	/* at probe */
void nvmet_mdev_ctrl_uninit(struct nvmet_mdev_ctrl *ctrl);	/* at release */
void nvmet_mdev_ctrl_open(struct nvmet_mdev_ctrl *ctrl);	/* ctrl->lock held */
void nvmet_mdev_ctrl_close(struct nvmet_mdev_ctrl *ctrl);	/* ctrl->lock held */
/* Function level reset: CC.EN=0 semantics plus register reset; lock held. */
void nvmet_mdev_ctrl_reset(struct nvmet_mdev_ctrl *ctrl);
/* PCI_COMMAND bus mastering was turned on or off; ctrl->lock held. */
void nvmet_mdev_bus_master_changed(struct nvmet_mdev_ctrl *ctrl);
/* BAR0 register page (offsets < NVME_REG_DBS) and doorbells; lock held. */
void nvmet_mdev_regs_read(struct nvmet_mdev_ctrl *ctrl, u32 off, void *buf,
			  u32 count);
void nvmet_mdev_regs_write(struct nvmet_mdev_ctrl *ctrl, u32 off,
			   const void *buf, u32 count);
/*
 * After a trapped write to the doorbell page (@off in the page), without
 * ctrl->lock: the writer may fetch and submit an I/O SQ's new commands.
 */
void nvmet_mdev_db_written(struct nvmet_mdev_ctrl *ctrl, u32 off);
/*
 * Migration (the device model's migration.c calls these, ctrl->lock held).
 * Stop: no more fetching, DMA or interrupts; returns once every command
 * fetched has completed but the Asynchronous Event Requests nvmet holds,
 * so that the state is final (or -EINTR on a fatal signal, still running).
 * Run: undo it.
 */
int nvmet_mdev_ctrl_stop(struct nvmet_mdev_ctrl *ctrl);
void nvmet_mdev_ctrl_run(struct nvmet_mdev_ctrl *ctrl);
/*
 * The controller's state (registers, queues, features, the commands the
 * guest awaits): its size now, and the most it can take; saving it (into
 * a new buffer, after @headroom bytes), loading it (a stopped controller,
 * disabled first).
 * Loading validates everything and returns -EINVAL on any inconsistency,
 * leaving the controller disabled.
 */
size_t nvmet_mdev_state_size(struct nvmet_mdev_ctrl *ctrl);
size_t nvmet_mdev_state_max_size(void);
void *nvmet_mdev_state_save(struct nvmet_mdev_ctrl *ctrl, size_t headroom,
			    size_t *len);
int nvmet_mdev_state_load(struct nvmet_mdev_ctrl *ctrl, const void *buf,
			  size_t size);
/* vfio_device_ops.mmap: the doorbell page, the only part of BAR0 mapped. */
int nvmet_mdev_mmap(struct vfio_device *vdev, struct vm_area_struct *vma);
/* vfio dma_unmap callback: drop every pin in [iova, iova + length). */
void nvmet_mdev_dma_unmap(struct nvmet_mdev_ctrl *ctrl, u64 iova, u64 length);

/* ------------------------------------------------------------------ */
/* Calls from the controller into the device model.                    */

/* Signal MSI-X @vector (or INTx when MSI-X is off); any context. */
void nvmet_mdev_irq_raise(struct nvmet_mdev_ctrl *ctrl, u16 vector);
/* Whether @vector may be used by a CQ now (Create I/O CQ check). */
bool nvmet_mdev_irq_vector_valid(struct nvmet_mdev_ctrl *ctrl, u16 vector);

/* main.c / ctrl.c */
extern const struct nvmet_fabrics_ops nvmet_mdev_fabrics_ops;
int nvmet_mdev_add_port(struct nvmet_port *nport);
void nvmet_mdev_remove_port(struct nvmet_port *nport);
int nvmet_mdev_register_driver(void);
void nvmet_mdev_unregister_driver(void);

#endif /* _NVMET_MDEV_PRIV_H */
