// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: the controller's
 * state, as a live migration carries it from one mdev to another.
 *
 * Saved from a stopped controller (nvmet_mdev_ctrl_stop(): no command in
 * flight but the Asynchronous Event Requests nvmet holds), the state is
 * what the guest can tell apart: the registers, every queue (ring, size,
 * head, tail, phase, vector), the doorbells, Doorbell Buffer Config, the
 * features the transport or nvmet keeps for a PCI controller, the AERs the
 * guest awaits (submitted again to the destination's nvmet controller) and
 * the completions not yet posted (the CQ was full).  The host NQN and ID
 * must be the destination's own (the administrator gives both mdevs the
 * same, so that the guest keeps its access, registrations and
 * reservations; a VMM cannot make itself another host).
 *
 * Not carried: the controller ID (nvmet gives the destination's controller
 * its own; hosts read it once, at probe), the error log, events nvmet
 * queued while no AER was outstanding, the Changed Namespace List, the
 * keep alive timeout (PCI hosts do not set one), and the data path's
 * adaptive state (interrupt moderation, polling), which starts afresh.
 *
 * The destination trusts nothing: every value is checked as the guest's
 * own commands and register writes would be, the tunables the guest saw
 * must be the destination's, and the rings and buffers must be mapped.
 */

#include <linux/overflow.h>
#include <linux/slab.h>

#include "datapath.h"

#define NVMET_MDEV_NR_QUEUES	(NVMET_MDEV_MAX_IO_QUEUES + 1)
#define NVMET_MDEV_NR_DBS	(2 * NVMET_MDEV_NR_QUEUES)
#define NVMET_MDEV_VEC_WORDS	DIV_ROUND_UP(NVMET_MDEV_MAX_VECTORS, 64)

/* One SQ; size 0: the SQ does not exist. */
struct nvmet_mdev_state_sq {
	__le64	iova;
	__le16	size;
	__le16	cqid;
	__le16	head;
	__le16	rsvd;
} __packed;

/* One CQ; size 0: the CQ does not exist. */
struct nvmet_mdev_state_cq {
	__le64	iova;
	__le16	size;
	__le16	tail;
	__le16	head;
	__le16	vector;
	u8	phase;
	u8	irq_enabled;
	u8	rsvd[6];
} __packed;

/* A completion not posted yet; the phase tag is the CQ's at posting. */
struct nvmet_mdev_state_cqe {
	__le16	sqid;
	__le16	rsvd[3];
	struct nvme_completion cqe;
} __packed;

struct nvmet_mdev_ctrl_state {
	/* What the guest saw of the tunables: the destination's must match. */
	__le64	cap;
	__le32	vs;
	__le16	nr_io_queues;
	u8	mdts;
	u8	shadow_doorbells;
	/* An nvmet controller exists: enabled, ready, no fatal status. */
	u8	enabled;
	u8	rsvd0[7];
	char	hostnqn[NVMF_NQN_SIZE + 1];
	u8	hostid[16];

	__le64	asq;
	__le64	acq;
	__le32	intms;
	__le32	cc;
	__le32	csts;
	__le32	aqa;

	__le32	aen_enabled;
	__le32	arbitration;
	__le32	irq_coalesce;
	__le32	rsvd1;
	__le64	vec_cd[NVMET_MDEV_VEC_WORDS];

	__le64	dbbuf_db;
	__le64	dbbuf_ei;
	__le32	db[NVMET_MDEV_NR_DBS];
	struct nvmet_mdev_state_sq sqs[NVMET_MDEV_NR_QUEUES];
	struct nvmet_mdev_state_cq cqs[NVMET_MDEV_NR_QUEUES];
	u16	aer_cid[NVMET_ASYNC_EVENTS];	/* opaque, as the guest wrote them */
	__le16	nr_aers;
	__le16	rsvd2;
	__le32	nr_parked;
	struct nvmet_mdev_state_cqe parked[];
} __packed;

/* Whether reserved bytes are zero, as saved. */
#define nvmet_mdev_rsvd_ok(field)	\
	(!memchr_inv(&(field), 0, sizeof(field)))

/*
 * Completions parked on the CQs now: stable once the controller is
 * stopped, an estimate while it runs (the VMM may ask for the data size
 * then, and the guest may delete a CQ meanwhile: RCU keeps it).
 */
static unsigned int nvmet_mdev_nr_parked(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_iod *iod;
	struct nvmet_mdev_cq *cq;
	unsigned long flags;
	unsigned int n = 0;
	int qid;

	if (!ctrl->tctrl)
		return 0;
	rcu_read_lock();
	for (qid = 0; qid < NVMET_MDEV_NR_QUEUES; qid++) {
		cq = rcu_dereference(ctrl->dp->cqs[qid]);
		if (!cq)
			continue;
		spin_lock_irqsave(&cq->lock, flags);
		list_for_each_entry(iod, &cq->parked, parked)
			n++;
		spin_unlock_irqrestore(&cq->lock, flags);
	}
	rcu_read_unlock();
	return n;
}

/**
 * nvmet_mdev_state_size() - the size of the controller's state now
 * @ctrl: the controller (ctrl->lock held)
 *
 * Return: the bytes nvmet_mdev_state_save() would write, give or take the
 * completions of AERs that events end meanwhile.
 */
size_t nvmet_mdev_state_size(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_ctrl_state *st;

	return struct_size(st, parked, nvmet_mdev_nr_parked(ctrl));
}

/**
 * nvmet_mdev_state_max_size() - the largest controller state
 *
 * Return: its size in bytes: as many parked completions as command
 * contexts in all queues.
 */
size_t nvmet_mdev_state_max_size(void)
{
	struct nvmet_mdev_ctrl_state *st;

	return struct_size(st, parked, NVMET_MDEV_ADMIN_IODS +
			   NVMET_MDEV_MAX_IO_QUEUES *
			   NVMET_MDEV_MAX_QUEUE_ENTRIES);
}

static void nvmet_mdev_save_queues(struct nvmet_mdev_ctrl *ctrl,
				   struct nvmet_mdev_ctrl_state *st)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_state_sq *ssq;
	struct nvmet_mdev_state_cq *scq;
	struct nvmet_mdev_sq *sq;
	struct nvmet_mdev_cq *cq;
	unsigned long flags;
	int qid;

	for (qid = 0; qid < NVMET_MDEV_NR_QUEUES; qid++) {
		cq = rcu_access_pointer(dp->cqs[qid]);
		if (cq) {
			scq = &st->cqs[qid];
			scq->iova = cpu_to_le64(cq->iova);
			scq->size = cpu_to_le16(cq->size);
			scq->vector = cpu_to_le16(cq->vector);
			scq->irq_enabled = cq->irq_enabled;
			spin_lock_irqsave(&cq->lock, flags);
			scq->tail = cpu_to_le16(cq->tail);
			scq->head = cpu_to_le16(cq->head);
			scq->phase = cq->phase;
			spin_unlock_irqrestore(&cq->lock, flags);
		}
		sq = rcu_access_pointer(dp->sqs[qid]);
		if (sq) {
			ssq = &st->sqs[qid];
			ssq->iova = cpu_to_le64(sq->iova);
			ssq->size = cpu_to_le16(sq->size);
			ssq->cqid = cpu_to_le16(sq->cq->qid);
			ssq->head = cpu_to_le16(READ_ONCE(sq->head));
		}
	}
}

/* The completions parked, at most @max; tctrl->lock held. */
static unsigned int nvmet_mdev_save_parked(struct nvmet_mdev_ctrl *ctrl,
					   struct nvmet_mdev_ctrl_state *st,
					   unsigned int max)
{
	struct nvmet_mdev_iod *iod;
	struct nvmet_mdev_cq *cq;
	unsigned long flags;
	unsigned int n = 0;
	int qid;

	for (qid = 0; qid < NVMET_MDEV_NR_QUEUES; qid++) {
		cq = rcu_access_pointer(ctrl->dp->cqs[qid]);
		if (!cq)
			continue;
		spin_lock_irqsave(&cq->lock, flags);
		list_for_each_entry(iod, &cq->parked, parked) {
			if (n == max)
				break;
			st->parked[n].sqid = cpu_to_le16(iod->sq->qid);
			st->parked[n].cqe = iod->cqe;
			n++;
		}
		spin_unlock_irqrestore(&cq->lock, flags);
	}
	return n;
}

/*
 * The AERs nvmet holds, with tctrl->lock held; false if one is between
 * nvmet and its completion (try again once it has completed).
 */
static bool nvmet_mdev_save_aers(struct nvmet_mdev_ctrl *ctrl,
				 struct nvmet_mdev_ctrl_state *st)
{
	struct nvmet_ctrl *tctrl = ctrl->tctrl;
	unsigned int i;

	lockdep_assert_held(&tctrl->lock);
	if (!nvmet_mdev_quiet(ctrl))
		return false;
	for (i = 0; i < tctrl->nr_async_event_cmds; i++)
		st->aer_cid[i] = tctrl->async_event_cmds[i]->cmd->common.command_id;
	st->nr_aers = cpu_to_le16(tctrl->nr_async_event_cmds);
	return true;
}

/**
 * nvmet_mdev_state_save() - save a stopped controller's state
 * @ctrl: the controller (ctrl->lock held), stopped
 * @headroom: bytes to leave free at the start of the buffer
 * @len: receives the size of the state (after @headroom)
 *
 * Return: a kvmalloc()ed buffer, or an ERR_PTR().
 */
void *nvmet_mdev_state_save(struct nvmet_mdev_ctrl *ctrl, size_t headroom,
			    size_t *len)
{
	struct nvmet_ctrl *tctrl = ctrl->tctrl;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	u32 csts = READ_ONCE(ctrl->regs.csts);
	struct nvmet_mdev_ctrl_state *st;
	unsigned int nr_parked, i;
	void *buf;

	lockdep_assert_held(&ctrl->lock);
	if (WARN_ON_ONCE(!ctrl->stopped))
		return ERR_PTR(-EINVAL);

again:
	/* An event may complete an AER meanwhile: room for all of them. */
	nr_parked = nvmet_mdev_nr_parked(ctrl) + NVMET_ASYNC_EVENTS;
	buf = kvzalloc(headroom + struct_size(st, parked, nr_parked),
		       GFP_KERNEL_ACCOUNT);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	st = buf + headroom;

	st->cap = cpu_to_le64(ctrl->regs.cap);
	st->vs = cpu_to_le32(ctrl->regs.vs);
	st->shadow_doorbells = ctrl->params.shadow_doorbells;
	/* NUL padded (the buffer is zeroed), as the destination checks. */
	strscpy(st->hostnqn, ctrl->hostnqn);
	export_uuid(st->hostid, &ctrl->hostid);
	st->asq = cpu_to_le64(ctrl->regs.asq);
	st->acq = cpu_to_le64(ctrl->regs.acq);
	st->intms = cpu_to_le32(ctrl->regs.intms);
	st->cc = cpu_to_le32(ctrl->regs.cc);
	st->csts = cpu_to_le32(csts);
	st->aqa = cpu_to_le32(ctrl->regs.aqa);

	/* A controller with a fatal status waits for the guest's reset. */
	if (!tctrl || (csts & NVME_CSTS_CFS) || !(csts & NVME_CSTS_RDY)) {
		*len = struct_size(st, parked, 0);
		return buf;
	}

	st->enabled = 1;
	st->nr_io_queues = cpu_to_le16(dp->nr_io_queues);
	st->mdts = dp->mdts;
	st->aen_enabled = cpu_to_le32(READ_ONCE(tctrl->aen_enabled));
	st->arbitration = cpu_to_le32(READ_ONCE(tctrl->arbitration));
	st->irq_coalesce = cpu_to_le32(READ_ONCE(tctrl->irq_coalesce));
	for (i = 0; i < NVMET_MDEV_MAX_VECTORS; i++)
		if (test_bit(i, dp->vec_cd))
			st->vec_cd[i / 64] |= cpu_to_le64(BIT_ULL(i % 64));
	if (dp->sdb) {
		st->dbbuf_db = cpu_to_le64(dp->dbbuf_db.iova);
		st->dbbuf_ei = cpu_to_le64(dp->dbbuf_ei.iova);
	}
	for (i = 0; i < NVMET_MDEV_NR_DBS; i++)
		st->db[i] = READ_ONCE(ctrl->db[i]);
	nvmet_mdev_save_queues(ctrl, st);

	/*
	 * Under tctrl->lock no AER leaves nvmet, and once none is on its
	 * way from nvmet to its completion, an AER is either held by nvmet
	 * or parked: never both, never neither.
	 */
	mutex_lock(&tctrl->lock);
	if (!nvmet_mdev_save_aers(ctrl, st)) {
		mutex_unlock(&tctrl->lock);
		kvfree(buf);
		if (wait_event_killable(dp->pause_wq, nvmet_mdev_quiet(ctrl)))
			return ERR_PTR(-EINTR);
		goto again;
	}
	i = nvmet_mdev_save_parked(ctrl, st, nr_parked);
	mutex_unlock(&tctrl->lock);
	st->nr_parked = cpu_to_le32(i);
	*len = struct_size(st, parked, i);
	return buf;
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */

static int nvmet_mdev_load_cqs(struct nvmet_mdev_ctrl *ctrl,
			       const struct nvmet_mdev_ctrl_state *st)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	u16 admin_size = FIELD_GET(NVMET_MDEV_AQA_ACQS, ctrl->regs.aqa) + 1;
	const struct nvmet_mdev_state_cq *s;
	u16 size, tail, head, vector;
	u64 iova;
	int qid;

	for (qid = 0; qid < NVMET_MDEV_NR_QUEUES; qid++) {
		s = &st->cqs[qid];
		size = le16_to_cpu(s->size);
		if (!size) {
			/* The admin CQ is there; others are all zero. */
			if (!qid || memchr_inv(s, 0, sizeof(*s)))
				return -EINVAL;
			continue;
		}
		if (!nvmet_mdev_rsvd_ok(s->rsvd))
			return -EINVAL;
		iova = le64_to_cpu(s->iova);
		tail = le16_to_cpu(s->tail);
		head = le16_to_cpu(s->head);
		vector = le16_to_cpu(s->vector);
		if (qid > dp->nr_io_queues || size < 2 || size > dp->mqes + 1 ||
		    tail >= size || head >= size || s->phase > 1 ||
		    s->irq_enabled > 1 || !IS_ALIGNED(iova, NVMET_MDEV_MPS) ||
		    (s->irq_enabled &&
		     !nvmet_mdev_irq_vector_valid(ctrl, vector)))
			return -EINVAL;
		/* The admin CQ: as AQA and ACQ say, vector 0. */
		if (!qid && (size != admin_size || iova != ctrl->regs.acq ||
			     vector || !s->irq_enabled))
			return -EINVAL;
		if (!nvmet_mdev_restore_cq(ctrl, qid, size, iova, vector,
					   s->irq_enabled, tail, head,
					   s->phase))
			return -EINVAL;
	}
	return 0;
}

static int nvmet_mdev_load_sqs(struct nvmet_mdev_ctrl *ctrl,
			       const struct nvmet_mdev_ctrl_state *st)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	u16 admin_size = FIELD_GET(NVMET_MDEV_AQA_ASQS, ctrl->regs.aqa) + 1;
	const struct nvmet_mdev_state_sq *s;
	u16 size, cqid, head;
	u64 iova;
	int qid;

	for (qid = 0; qid < NVMET_MDEV_NR_QUEUES; qid++) {
		s = &st->sqs[qid];
		size = le16_to_cpu(s->size);
		if (!size) {
			if (!qid || memchr_inv(s, 0, sizeof(*s)))
				return -EINVAL;
			continue;
		}
		if (s->rsvd)
			return -EINVAL;
		iova = le64_to_cpu(s->iova);
		cqid = le16_to_cpu(s->cqid);
		head = le16_to_cpu(s->head);
		if (qid > dp->nr_io_queues || size < 2 || size > dp->mqes + 1 ||
		    head >= size || !IS_ALIGNED(iova, NVMET_MDEV_MPS) ||
		    cqid > dp->nr_io_queues || !rcu_access_pointer(dp->cqs[cqid]) ||
		    !cqid != !qid)
			return -EINVAL;
		if (!qid && (size != admin_size || iova != ctrl->regs.asq))
			return -EINVAL;
		if (!nvmet_mdev_restore_sq(ctrl, qid, cqid, size, iova, head))
			return -EINVAL;
	}
	return 0;
}

/* The AERs the guest awaits, and the completions it has not seen yet. */
static int nvmet_mdev_load_commands(struct nvmet_mdev_ctrl *ctrl,
				    const struct nvmet_mdev_ctrl_state *st,
				    u32 nr_parked)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvme_command cmd = {};
	struct nvme_completion cqe;
	struct nvmet_mdev_sq *sq;
	unsigned int i;
	u16 sqid;

	if (le16_to_cpu(st->nr_aers) > NVMET_ASYNC_EVENTS)
		return -EINVAL;
	for (i = 0; i < nr_parked; i++) {
		sqid = le16_to_cpu(st->parked[i].sqid);
		cqe = st->parked[i].cqe;
		if (!nvmet_mdev_rsvd_ok(st->parked[i].rsvd) ||
		    sqid >= NVMET_MDEV_NR_QUEUES ||
		    le16_to_cpu(cqe.sq_id) != sqid)
			return -EINVAL;
		sq = rcu_access_pointer(dp->sqs[sqid]);
		if (!sq || le16_to_cpu(cqe.sq_head) >= sq->size)
			return -EINVAL;
		cqe.status &= cpu_to_le16(~1);	/* the phase is the CQ's */
		/* No more than the SQ has command contexts. */
		if (nvmet_mdev_repark(sq, &cqe))
			return -EINVAL;
	}

	sq = rcu_access_pointer(dp->sqs[0]);
	cmd.common.opcode = nvme_admin_async_event;
	for (i = 0; i < le16_to_cpu(st->nr_aers); i++) {
		cmd.common.command_id = st->aer_cid[i];
		if (nvmet_mdev_resubmit(sq, &cmd))
			return -EINVAL;
	}
	return 0;
}

/* A controller that was enabled: the nvmet controller, queues, commands. */
static int nvmet_mdev_load_enabled(struct nvmet_mdev_ctrl *ctrl,
				   const struct nvmet_mdev_ctrl_state *st,
				   u32 nr_parked)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	u32 csts = ctrl->regs.csts, aen = le32_to_cpu(st->aen_enabled);
	struct nvmet_ctrl *tctrl;
	unsigned int i;
	int ret;

	if (!nvmet_cc_en(ctrl->regs.cc) || nvmet_cc_shn(ctrl->regs.cc) ||
	    (csts & (NVME_CSTS_CFS | NVME_CSTS_SHST_MASK)) ||
	    !(csts & NVME_CSTS_RDY) || (aen & ~NVMET_AEN_CFG_ALL))
		return -EINVAL;
	ret = nvmet_mdev_ctrl_create(ctrl);
	if (ret)
		return ret;
	tctrl = ctrl->tctrl;
	if (le16_to_cpu(st->nr_io_queues) != dp->nr_io_queues ||
	    st->mdts != dp->mdts || le32_to_cpu(st->vs) != ctrl->regs.vs) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "migration: the source had %u I/O queues, MDTS %u, version %#x; this mdev %u, %u, %#x\n",
				     le16_to_cpu(st->nr_io_queues), st->mdts,
				     le32_to_cpu(st->vs), dp->nr_io_queues,
				     dp->mdts, ctrl->regs.vs);
		return -EINVAL;
	}

	WRITE_ONCE(tctrl->aen_enabled, aen);
	WRITE_ONCE(tctrl->arbitration, le32_to_cpu(st->arbitration));
	WRITE_ONCE(tctrl->irq_coalesce, le32_to_cpu(st->irq_coalesce));
	for (i = 0; i < NVMET_MDEV_MAX_VECTORS; i++) {
		if (!(le64_to_cpu(st->vec_cd[i / 64]) & BIT_ULL(i % 64)))
			continue;
		if (i > dp->nr_io_queues)
			return -EINVAL;
		set_bit(i, dp->vec_cd);
	}

	for (i = 0; i < NVMET_MDEV_NR_DBS; i++)
		WRITE_ONCE(ctrl->db[i], st->db[i]);
	if ((st->dbbuf_db || st->dbbuf_ei) &&
	    (!ctrl->params.shadow_doorbells ||
	     nvmet_mdev_dbbuf_restore(ctrl, le64_to_cpu(st->dbbuf_db),
				      le64_to_cpu(st->dbbuf_ei))))
		return -EINVAL;

	ret = nvmet_mdev_load_cqs(ctrl, st);
	if (!ret)
		ret = nvmet_mdev_load_sqs(ctrl, st);
	if (!ret)
		ret = nvmet_mdev_load_commands(ctrl, st, nr_parked);
	if (!ret)
		ret = nvmet_mdev_start_threads(ctrl);
	return ret;
}

/**
 * nvmet_mdev_state_load() - restore a controller's state
 * @ctrl: the controller (ctrl->lock held), stopped
 * @buf: the state, as nvmet_mdev_state_save() wrote it
 * @size: its size
 *
 * Return: 0, or a negative errno (-EINVAL for a state this mdev cannot
 * take) with the controller disabled and its registers reset.
 */
int nvmet_mdev_state_load(struct nvmet_mdev_ctrl *ctrl, const void *buf,
			  size_t size)
{
	const struct nvmet_mdev_ctrl_state *st = buf;
	struct nvmet_mdev_regs r;
	u32 nr_parked;
	size_t i;
	int ret;

	lockdep_assert_held(&ctrl->lock);
	if (WARN_ON_ONCE(!ctrl->stopped))
		return -EINVAL;
	nvmet_mdev_ctrl_disable(ctrl, false);
	nvmet_mdev_regs_reset(ctrl, true);

	if (size < sizeof(*st))
		return -EINVAL;
	nr_parked = le32_to_cpu(st->nr_parked);
	if (size != struct_size(st, parked, nr_parked))
		return -EINVAL;
	if (le64_to_cpu(st->cap) != ctrl->regs.cap ||
	    st->shadow_doorbells != ctrl->params.shadow_doorbells) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "migration: the source's CAP %#llx, shadow doorbells %u; this mdev's %#llx, %u\n",
				     le64_to_cpu(st->cap), st->shadow_doorbells,
				     ctrl->regs.cap,
				     ctrl->params.shadow_doorbells);
		return -EINVAL;
	}
	/* A host NQN, NUL padded; reserved bytes zero. */
	i = strnlen(st->hostnqn, sizeof(st->hostnqn));
	if (!i || i == sizeof(st->hostnqn) ||
	    memchr_inv(st->hostnqn + i, 0, sizeof(st->hostnqn) - i) ||
	    st->enabled > 1 || !nvmet_mdev_rsvd_ok(st->rsvd0) ||
	    st->rsvd1 || st->rsvd2)
		return -EINVAL;
	/* A controller that was not enabled carries nothing more. */
	if (!st->enabled && (st->nr_io_queues || st->mdts))
		return -EINVAL;
	if (!st->enabled &&
	    memchr_inv(&st->aen_enabled, 0,
		       offsetof(struct nvmet_mdev_ctrl_state, parked) -
		       offsetof(struct nvmet_mdev_ctrl_state, aen_enabled)))
		return -EINVAL;

	r.intms = le32_to_cpu(st->intms);
	r.cc = le32_to_cpu(st->cc);
	r.csts = le32_to_cpu(st->csts);
	r.aqa = le32_to_cpu(st->aqa);
	r.asq = le64_to_cpu(st->asq);
	r.acq = le64_to_cpu(st->acq);
	ret = nvmet_mdev_regs_restore(ctrl, &r);
	if (ret)
		goto reset;
	/*
	 * The same host: what it may access and the reservations it holds
	 * are the administrator's to give (the hostnqn and hostid tunables),
	 * not the VMM's.
	 */
	if (strcmp(st->hostnqn, ctrl->hostnqn) ||
	    memcmp(st->hostid, ctrl->hostid.b, sizeof(st->hostid))) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "migration: the source's host NQN and ID (%*pE, %pUb) are not this mdev's (%s, %pUb)\n",
				     (int)strlen(st->hostnqn), st->hostnqn,
				     st->hostid, ctrl->hostnqn, &ctrl->hostid);
		ret = -EINVAL;
		goto reset;
	}

	if (st->enabled) {
		ret = nvmet_mdev_load_enabled(ctrl, st, nr_parked);
		if (ret)
			goto reset;
	} else if (nr_parked || st->nr_aers) {
		ret = -EINVAL;
		goto reset;
	} else if (nvmet_cc_en(r.cc) && !nvmet_cc_shn(r.cc) &&
		   !(r.csts & (NVME_CSTS_RDY | NVME_CSTS_CFS |
			       NVME_CSTS_SHST_MASK))) {
		/*
		 * Stopped between the guest's CC.EN = 1 and CSTS.RDY: enable
		 * as that write did on the source, or the guest waits for a
		 * ready bit that nothing sets.
		 */
		ret = nvmet_mdev_ctrl_enable(ctrl);
		if (ret)
			goto reset;
	}
	return 0;

reset:
	nvmet_mdev_ctrl_disable(ctrl, false);
	nvmet_mdev_regs_reset(ctrl, true);
	return ret;
}
