// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the NVMe target's PCI transport helpers: the PRP and SGL
 * walks, against a host memory that is an array here, and the queue ring
 * arithmetic that the host's doorbell values feed.
 */

#include <kunit/test.h>
#include <linux/nvme.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include "../nvmet.h"
#include "../pci-common.h"

/* The host memory: MEM_PAGES pages of 4 KiB from PCI address MEM_BASE. */
#define MEM_BASE	0x10000000ULL
#define MEM_PAGES	16
#define MEM_SIZE	(MEM_PAGES * SZ_4K)
#define PAGE_ADDR(n)	(MEM_BASE + (u64)(n) * SZ_4K)
#define MAX_RANGES	600

struct host {
	u8	*mem;
	u64	lo, hi;			/* the lowest and highest byte read */
	int	reads;
	int	fail_add;		/* fail the n-th add (1-based) ... */
	int	add_error;		/* ... with this */
	int	nr;
	u64	addr[MAX_RANGES];
	u64	len[MAX_RANGES];
};

static int host_read(void *priv, u64 addr, void *buf, size_t len)
{
	struct host *h = priv;

	if (addr < MEM_BASE || addr + len > MEM_BASE + MEM_SIZE)
		return -EFAULT;
	memcpy(buf, h->mem + (addr - MEM_BASE), len);
	h->lo = min(h->lo, addr);
	h->hi = max(h->hi, addr + len - 1);
	h->reads++;
	return 0;
}

static int host_add(void *priv, u64 addr, u64 len)
{
	struct host *h = priv;

	if (h->fail_add && h->nr + 1 == h->fail_add)
		return h->add_error;
	if (h->nr >= MAX_RANGES)
		return -E2BIG;
	h->addr[h->nr] = addr;
	h->len[h->nr] = len;
	h->nr++;
	return 0;
}

static struct host *host_init(struct kunit *test, struct nvmet_pci_dptr *d,
			      u8 mps_shift)
{
	struct host *h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, h);
	h->mem = kunit_kzalloc(test, MEM_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h->mem);
	h->lo = U64_MAX;
	*d = (struct nvmet_pci_dptr) {
		.read = host_read, .add = host_add, .priv = h,
		.mps_shift = mps_shift,
	};
	return h;
}

static void put_prp(struct host *h, u64 at, u64 prp)
{
	__le64 v = cpu_to_le64(prp);

	memcpy(h->mem + (at - MEM_BASE), &v, sizeof(v));
}

static void put_sgl(struct host *h, u64 at, u8 type, u64 addr, u32 len)
{
	struct nvme_sgl_desc desc = {
		.addr = cpu_to_le64(addr), .length = cpu_to_le32(len),
		.type = type,
	};

	memcpy(h->mem + (at - MEM_BASE), &desc, sizeof(desc));
}

static u64 added(struct host *h)
{
	u64 total = 0;
	int i;

	for (i = 0; i < h->nr; i++)
		total += h->len[i];
	return total;
}

#define DATA		(NVME_SGL_FMT_DATA_DESC << 4)
#define SEG		(NVME_SGL_FMT_SEG_DESC << 4)
#define LAST		(NVME_SGL_FMT_LAST_SEG_DESC << 4)

static void prp_count(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(0, 1, 12), 1);
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(0, SZ_4K, 12), 1);
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(0x200, SZ_4K, 12), 2);
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(0xffc, 4, 12), 1);
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(0xffc, 8, 12), 2);
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(0, SZ_1M, 12), 256);
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(4, SZ_1M, 12), 257);
	KUNIT_EXPECT_EQ(test, nvmet_pci_prp_count(SZ_16K, SZ_64K, 16), 2);
}

/* PRP1 alone, at an offset; PRP2 is not looked at. */
static void prp_one_page(struct kunit *test)
{
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);

	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1) + 0x10,
						 0x3, 0x100), NVME_SC_SUCCESS);
	KUNIT_ASSERT_EQ(test, h->nr, 1);
	KUNIT_EXPECT_EQ(test, h->addr[0], PAGE_ADDR(1) + 0x10);
	KUNIT_EXPECT_EQ(test, h->len[0], 0x100);
	KUNIT_EXPECT_EQ(test, h->reads, 0);
}

static void prp1_offset_not_dword(struct kunit *test)
{
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);

	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1) + 2, 0, 4),
			NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR);
	KUNIT_EXPECT_EQ(test, h->nr, 0);
}

/* PRP2 as the second data page, apart from or right after PRP1's. */
static void prp_two_pages(struct kunit *test)
{
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);

	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1) + 0x200,
						 PAGE_ADDR(5), SZ_4K),
			NVME_SC_SUCCESS);
	KUNIT_ASSERT_EQ(test, h->nr, 2);
	KUNIT_EXPECT_EQ(test, h->addr[0], PAGE_ADDR(1) + 0x200);
	KUNIT_EXPECT_EQ(test, h->len[0], 0xe00);
	KUNIT_EXPECT_EQ(test, h->addr[1], PAGE_ADDR(5));
	KUNIT_EXPECT_EQ(test, h->len[1], 0x200);

	h->nr = 0;
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1) + 0x200,
						 PAGE_ADDR(2), SZ_4K),
			NVME_SC_SUCCESS);
	KUNIT_ASSERT_EQ(test, h->nr, 1);
	KUNIT_EXPECT_EQ(test, h->len[0], SZ_4K);
	KUNIT_EXPECT_EQ(test, h->reads, 0);
}

static void prp2_data_page_offset(struct kunit *test)
{
	struct nvmet_pci_dptr d;

	host_init(test, &d, 12);
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1),
						 PAGE_ADDR(5) + 8, SZ_8K),
			NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR);
}

/* A list in one page, at a quadword offset; only what is needed is read. */
static void prp_list(struct kunit *test)
{
	u64 list = PAGE_ADDR(3) + 0x18;
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);

	put_prp(h, list, PAGE_ADDR(8));
	put_prp(h, list + 8, PAGE_ADDR(9));
	put_prp(h, list + 16, PAGE_ADDR(12));
	put_prp(h, list + 24, 0x123);	/* past the transfer: never read */
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(7) + 0x800,
						 list, 3 * SZ_4K + 0x100),
			NVME_SC_SUCCESS);
	KUNIT_ASSERT_EQ(test, h->nr, 2);
	KUNIT_EXPECT_EQ(test, h->addr[0], PAGE_ADDR(7) + 0x800);
	KUNIT_EXPECT_EQ(test, h->len[0], 0x800 + 2 * SZ_4K);
	KUNIT_EXPECT_EQ(test, h->addr[1], PAGE_ADDR(12));
	KUNIT_EXPECT_EQ(test, h->len[1], 0x900);
	KUNIT_EXPECT_EQ(test, added(h), 3 * SZ_4K + 0x100);
	KUNIT_EXPECT_EQ(test, h->lo, list);
	KUNIT_EXPECT_EQ(test, h->hi, list + 23);
}

static void prp_list_bad_alignment(struct kunit *test)
{
	u64 list = PAGE_ADDR(3);
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);

	/* The list pointer must be quadword aligned. */
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1), list + 4,
						 3 * SZ_4K),
			NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR);
	/* Entries after PRP1 must be page aligned. */
	put_prp(h, list, PAGE_ADDR(8));
	put_prp(h, list + 8, PAGE_ADDR(9) + 0x200);
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1), list,
						 3 * SZ_4K),
			NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR);
}

/*
 * A list that starts two entries before the end of its page: one data
 * entry, then the pointer to the next list page.
 */
static void prp_list_chained(struct kunit *test)
{
	u64 list = PAGE_ADDR(3) + SZ_4K - 16, next = PAGE_ADDR(4);
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);

	put_prp(h, list, PAGE_ADDR(10));
	put_prp(h, list + 8, next);
	put_prp(h, next, PAGE_ADDR(12));
	put_prp(h, next + 8, PAGE_ADDR(13));
	put_prp(h, next + 16, PAGE_ADDR(15));
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1), list,
						 5 * SZ_4K),
			NVME_SC_SUCCESS);
	KUNIT_ASSERT_EQ(test, h->nr, 4);
	KUNIT_EXPECT_EQ(test, h->addr[0], PAGE_ADDR(1));
	KUNIT_EXPECT_EQ(test, h->addr[1], PAGE_ADDR(10));
	KUNIT_EXPECT_EQ(test, h->addr[2], PAGE_ADDR(12));
	KUNIT_EXPECT_EQ(test, h->len[2], 2 * SZ_4K);
	KUNIT_EXPECT_EQ(test, h->addr[3], PAGE_ADDR(15));
	KUNIT_EXPECT_EQ(test, added(h), 5 * SZ_4K);
	KUNIT_EXPECT_EQ(test, h->hi, next + 23);

	/* The next list page must be page aligned. */
	h->nr = 0;
	put_prp(h, list + 8, next + 8);
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1), list,
						 5 * SZ_4K),
			NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR);
}

/* A full 1 MiB transfer: 256 entries in one list page, none chained. */
static void prp_list_full_page(struct kunit *test)
{
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);
	int i;

	for (i = 0; i < 255; i++)
		put_prp(h, PAGE_ADDR(2) + i * 8, PAGE_ADDR(4) + (i % 2) * SZ_4K);
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(3), PAGE_ADDR(2),
						 SZ_1M),
			NVME_SC_SUCCESS);
	KUNIT_EXPECT_EQ(test, added(h), SZ_1M);
	KUNIT_EXPECT_EQ(test, h->hi, PAGE_ADDR(2) + 255 * 8 - 1);
}

/*
 * MDTS: the bytes it allows, and the largest transfer nvmet-mdev allows
 * (MDTS 10, 4 MiB), whose PRP list chains over list pages (two, three
 * with a PRP1 offset): each data page is added once and the walk reads no
 * list entry beyond the last one the transfer needs.
 */
static void prp_mdts_bound(struct kunit *test)
{
	static const unsigned int offsets[] = { 0, 512 };
	const u64 data = 0x200000000ULL, max = nvmet_pci_mdts_bytes(10, 12);
	unsigned int i, j, n, page;
	struct nvmet_pci_dptr d;
	struct host *h;
	u64 at;

	KUNIT_EXPECT_EQ(test, nvmet_pci_mdts_bytes(0, 12), U64_MAX);
	KUNIT_EXPECT_EQ(test, nvmet_pci_mdts_bytes(1, 12), SZ_8K);
	KUNIT_EXPECT_EQ(test, max, SZ_4M);
	KUNIT_EXPECT_EQ(test, nvmet_pci_mdts_bytes(5, 16), SZ_2M);

	for (j = 0; j < ARRAY_SIZE(offsets); j++) {
		h = host_init(test, &d, 12);
		n = nvmet_pci_prp_count(data + offsets[j], max, 12);
		KUNIT_EXPECT_EQ(test, n, SZ_1K + !!offsets[j]);
		/*
		 * Entries 1 to n - 1 in list pages from page 2 on; the last
		 * slot of a page points to the next one unless it holds the
		 * last entry.
		 */
		page = 2;
		at = PAGE_ADDR(page);
		for (i = 1; i < n; i++) {
			if (at == PAGE_ADDR(page) + SZ_4K - 8 && n - i > 1) {
				put_prp(h, at, PAGE_ADDR(++page));
				at = PAGE_ADDR(page);
			}
			put_prp(h, at, data + (u64)i * SZ_4K);
			at += 8;
		}
		KUNIT_EXPECT_EQ(test, page, offsets[j] ? 4 : 3);
		KUNIT_EXPECT_EQ(test,
				nvmet_pci_map_prps(&d, data + offsets[j],
						   PAGE_ADDR(2), max),
				NVME_SC_SUCCESS);
		KUNIT_EXPECT_EQ(test, h->nr, 1);
		KUNIT_EXPECT_EQ(test, h->addr[0], data + offsets[j]);
		KUNIT_EXPECT_EQ(test, added(h), max);
		KUNIT_EXPECT_EQ(test, h->hi, at - 1);
	}
}

/* A 64 KiB memory page size: offsets and entries in its units. */
static void prp_mps_64k(struct kunit *test)
{
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 16);

	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, 0x40000 + SZ_16K, 0x90000,
						 SZ_64K), NVME_SC_SUCCESS);
	KUNIT_ASSERT_EQ(test, h->nr, 2);
	KUNIT_EXPECT_EQ(test, h->len[0], SZ_64K - SZ_16K);
	KUNIT_EXPECT_EQ(test, h->len[1], SZ_16K);
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, 0x40000, 0x90000 + SZ_4K,
						 SZ_128K),
			NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR);
}

static void prp_host_errors(struct kunit *test)
{
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);

	/* A list outside host memory. */
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1),
						 MEM_BASE + MEM_SIZE, 3 * SZ_4K),
			NVME_SC_DATA_XFER_ERROR);
	/* Data the transport cannot reach, at the first range and later. */
	h->nr = 0;
	h->fail_add = 1;
	h->add_error = -EFAULT;
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1), 0, 4),
			NVME_SC_DATA_XFER_ERROR);
	h->fail_add = 2;
	h->add_error = -ENOMEM;
	KUNIT_EXPECT_EQ(test, nvmet_pci_map_prps(&d, PAGE_ADDR(1),
						 PAGE_ADDR(5), SZ_8K),
			NVME_SC_DATA_XFER_ERROR);
	KUNIT_EXPECT_EQ(test, h->nr, 1);
}

static u16 collect(struct nvmet_pci_dptr *d, u8 type, u64 addr, u32 len,
		   size_t xfer, struct nvme_sgl_desc *descs,
		   unsigned int max, unsigned int align, unsigned int *nr)
{
	struct nvme_sgl_desc sgl1 = {
		.addr = cpu_to_le64(addr), .length = cpu_to_le32(len),
		.type = type,
	};

	return nvmet_pci_collect_sgl(d, &sgl1, xfer, descs, max, align, nr);
}

static void sgl_one_block(struct kunit *test)
{
	struct nvme_sgl_desc descs[4];
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);
	unsigned int nr = 0;

	KUNIT_EXPECT_EQ(test, collect(&d, DATA, PAGE_ADDR(1) + 4, 512, 512,
				      descs, 4, 4, &nr), NVME_SC_SUCCESS);
	KUNIT_EXPECT_EQ(test, nr, 1);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(descs[0].addr), PAGE_ADDR(1) + 4);
	KUNIT_EXPECT_EQ(test, h->reads, 0);
	/* The length must be the transfer's. */
	KUNIT_EXPECT_EQ(test, collect(&d, DATA, PAGE_ADDR(1), 512, 1024,
				      descs, 4, 4, &nr),
			NVME_SC_SGL_INVALID_DATA | NVME_STATUS_DNR);
	KUNIT_EXPECT_EQ(test, collect(&d, DATA, PAGE_ADDR(1), 2048, 1024,
				      descs, 4, 4, &nr),
			NVME_SC_SGL_INVALID_DATA | NVME_STATUS_DNR);
	/* Keyed, bit bucket and offset descriptors are not for PCIe. */
	KUNIT_EXPECT_EQ(test, collect(&d, NVME_KEY_SGL_FMT_DATA_DESC << 4,
				      PAGE_ADDR(1), 512, 512, descs, 4, 4, &nr),
			NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR);
	KUNIT_EXPECT_EQ(test, collect(&d, DATA | NVME_SGL_FMT_OFFSET,
				      PAGE_ADDR(1), 512, 512, descs, 4, 4, &nr),
			NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR);
	KUNIT_EXPECT_EQ(test, collect(&d, 1 << 4, PAGE_ADDR(1), 512, 512,
				      descs, 4, 4, &nr),
			NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR);
}

/* A Segment of two blocks and a Last Segment of two. */
static void sgl_segments(struct kunit *test)
{
	u64 seg1 = PAGE_ADDR(2), seg2 = PAGE_ADDR(3) + 0x40;
	struct nvme_sgl_desc descs[8];
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);
	unsigned int nr = 0;

	put_sgl(h, seg1, DATA, PAGE_ADDR(8), 1024);
	put_sgl(h, seg1 + 16, DATA, PAGE_ADDR(9) + 512, 512);
	put_sgl(h, seg1 + 32, LAST, seg2, 32);
	put_sgl(h, seg2, DATA, PAGE_ADDR(10), 0);
	put_sgl(h, seg2 + 16, DATA, PAGE_ADDR(11), 2048);
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg1, 48, 3584, descs, 8, 4,
				      &nr), NVME_SC_SUCCESS);
	KUNIT_ASSERT_EQ(test, nr, 4);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(descs[1].addr), PAGE_ADDR(9) + 512);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(descs[3].length), 2048);
	KUNIT_EXPECT_EQ(test, h->reads, 2);

	/* Four blocks are too many for a transport that takes three. */
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg1, 48, 3584, descs, 3, 4,
				      &nr),
			NVME_SC_SGL_INVALID_COUNT | NVME_STATUS_DNR);
	/* Dword granularity, if the transport asks for it. */
	put_sgl(h, seg2 + 16, DATA, PAGE_ADDR(11), 2046);
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg1, 48, 3582, descs, 8, 4,
				      &nr),
			NVME_SC_SGL_INVALID_GRANULARITY | NVME_STATUS_DNR);
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg1, 48, 3582, descs, 8, 1,
				      &nr), NVME_SC_SUCCESS);
}

static void sgl_bad_segments(struct kunit *test)
{
	u64 seg1 = PAGE_ADDR(2), seg2 = PAGE_ADDR(4);
	struct nvme_sgl_desc descs[8];
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);
	unsigned int nr = 0;

	/* A Segment whose segment ends without chaining. */
	put_sgl(h, seg1, DATA, PAGE_ADDR(8), 512);
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg1, 16, 512, descs, 8, 4,
				      &nr),
			NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR);
	/* A segment descriptor that is not its segment's last entry. */
	put_sgl(h, seg1, LAST, seg2, 16);
	put_sgl(h, seg1 + 16, DATA, PAGE_ADDR(8), 512);
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg1, 32, 512, descs, 8, 4,
				      &nr),
			NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR);
	/* A Last Segment that chains to another segment. */
	put_sgl(h, seg1, DATA, PAGE_ADDR(8), 512);
	put_sgl(h, seg1 + 16, SEG, seg2, 16);
	put_sgl(h, seg2, DATA, PAGE_ADDR(9), 512);
	KUNIT_EXPECT_EQ(test, collect(&d, LAST, seg1, 32, 1024, descs, 8, 4,
				      &nr),
			NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR);
	/* Segment lengths: none, or not whole descriptors. */
	KUNIT_EXPECT_EQ(test, collect(&d, LAST, seg1, 0, 512, descs, 8, 4,
				      &nr),
			NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR);
	KUNIT_EXPECT_EQ(test, collect(&d, LAST, seg1, 24, 512, descs, 8, 4,
				      &nr),
			NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR);
	/* A segment outside host memory. */
	KUNIT_EXPECT_EQ(test, collect(&d, LAST, MEM_BASE + MEM_SIZE, 16, 512,
				      descs, 8, 4, &nr),
			NVME_SC_DATA_XFER_ERROR);
}

/* A segment that chains to itself ends after max_descs segments. */
static void sgl_loop(struct kunit *test)
{
	u64 seg = PAGE_ADDR(2);
	struct nvme_sgl_desc descs[16];
	struct nvmet_pci_dptr d;
	struct host *h = host_init(test, &d, 12);
	unsigned int nr = 0;

	put_sgl(h, seg, DATA, PAGE_ADDR(8), 512);
	put_sgl(h, seg + 16, SEG, seg, 32);
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg, 32, SZ_1M, descs, 16, 4,
				      &nr),
			NVME_SC_SGL_INVALID_COUNT | NVME_STATUS_DNR);
	KUNIT_EXPECT_LE(test, h->reads, 16);

	/* Without data blocks, the segment count bounds it. */
	h->reads = 0;
	put_sgl(h, seg, SEG, seg, 16);
	KUNIT_EXPECT_EQ(test, collect(&d, SEG, seg, 16, SZ_1M, descs, 16, 4,
				      &nr),
			NVME_SC_SGL_INVALID_COUNT | NVME_STATUS_DNR);
	KUNIT_EXPECT_EQ(test, h->reads, 16);
}

/* Ring arithmetic: a ring of 4 entries, and the largest one (65536). */
static void ring_next_count(struct kunit *test)
{
	u16 idx = 2;

	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_next(0, 4), 1);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_next(3, 4), 0);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_next(65535, 65536), 0);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_count(1, 1, 4), 0);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_count(1, 3, 4), 2);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_count(3, 1, 4), 2);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_count(2, 1, 4), 3);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_count(65535, 0, 65536), 1);
	KUNIT_EXPECT_EQ(test, nvmet_pci_ring_count(0, 65535, 65536), 65535);
	/* The Phase Tag inverts where the index wraps, and only there. */
	KUNIT_EXPECT_FALSE(test, nvmet_pci_ring_advance(&idx, 4));
	KUNIT_EXPECT_EQ(test, idx, 3);
	KUNIT_EXPECT_TRUE(test, nvmet_pci_ring_advance(&idx, 4));
	KUNIT_EXPECT_EQ(test, idx, 0);
	idx = 65535;
	KUNIT_EXPECT_TRUE(test, nvmet_pci_ring_advance(&idx, 65536));
	KUNIT_EXPECT_EQ(test, idx, 0);
}

/* A CQ is full when the entry after the tail is the head, wrapped or not. */
static void cq_full(struct kunit *test)
{
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_full(0, 0, 4));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_full(0, 2, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_full(0, 3, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_full(2, 1, 4));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_full(3, 1, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_full(1, 0, 2));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_full(0, 1, 2));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_full(0, 65535, 65536));
}

/* The host may free the entries posted, no more, and names entries only. */
static void cq_head_valid(struct kunit *test)
{
	/* Head 1, tail 3: 1, 2 and 3 are valid heads, 0 is not. */
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_head_valid(1, 1, 3, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_head_valid(2, 1, 3, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_head_valid(3, 1, 3, 4));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_head_valid(0, 1, 3, 4));
	/* Wrapped: head 3, tail 1: 3, 0 and 1. */
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_head_valid(0, 3, 1, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_head_valid(1, 3, 1, 4));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_head_valid(2, 3, 1, 4));
	/* Nothing posted: only the head itself. */
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_head_valid(2, 2, 2, 4));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_head_valid(3, 2, 2, 4));
	/* Beyond the queue, including values that alias an entry in a u16. */
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_head_valid(4, 0, 3, 4));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_head_valid(0x10001, 0, 3, 4));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_head_valid(U32_MAX, 0, 3, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_cq_head_valid(65535, 0, 65535, 65536));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_cq_head_valid(65536, 0, 65535,
							 65536));
}

static void sq_tail_valid(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, nvmet_pci_sq_tail_valid(0, 2));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_sq_tail_valid(1, 2));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_sq_tail_valid(2, 2));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_sq_tail_valid(0x10000, 4));
	KUNIT_EXPECT_TRUE(test, nvmet_pci_sq_tail_valid(65535, 65536));
	KUNIT_EXPECT_FALSE(test, nvmet_pci_sq_tail_valid(U32_MAX, 65536));
}

/* The host's test, from drivers/nvme/host/pci.c: nvme_dbbuf_need_event(). */
static bool host_need_event(u16 event_idx, u16 new_idx, u16 old)
{
	return (u16)(new_idx - event_idx - 1) < (u16)(new_idx - old);
}

/*
 * The EventIdx the controller publishes makes the host ring exactly on the
 * write that queues the n-th entry, one entry per write or several at once,
 * at and across the ring's wrap (which the host's u16 arithmetic does not
 * follow for sizes other than 65536).
 */
static void check_eventidx(struct kunit *test, u16 head, u32 n, u32 size)
{
	u16 ei = nvmet_pci_sq_eventidx(head, n, size);
	u16 tail = head, next;
	u32 k;

	for (k = 1; k <= n; k++) {
		next = nvmet_pci_ring_next(tail, size);
		if (host_need_event(ei, next, tail))
			break;
		tail = next;
	}
	KUNIT_EXPECT_EQ_MSG(test, k, n, "size %u head %u", size, head);
	/* n entries in one write ring; n - 1 do not. */
	KUNIT_EXPECT_TRUE(test, host_need_event(ei, (head + n) % size, head));
	if (n > 1)
		KUNIT_EXPECT_FALSE(test, host_need_event(ei, (head + n - 1) % size,
							 head));
}

static void sq_eventidx(struct kunit *test)
{
	static const u32 sizes[] = { 2, 4, 5, 1024, 65536 };
	unsigned int i, h;
	u32 n;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		u32 size = sizes[i];
		u16 heads[] = { 0, 1, size / 2, size - 2, size - 1 };

		for (h = 0; h < ARRAY_SIZE(heads); h++)
			for (n = 1; n < size && n <= 40; n++)
				check_eventidx(test, heads[h], n, size);
	}
}

static struct kunit_case nvmet_pci_common_cases[] = {
	KUNIT_CASE(prp_count),
	KUNIT_CASE(prp_one_page),
	KUNIT_CASE(prp1_offset_not_dword),
	KUNIT_CASE(prp_two_pages),
	KUNIT_CASE(prp2_data_page_offset),
	KUNIT_CASE(prp_list),
	KUNIT_CASE(prp_list_bad_alignment),
	KUNIT_CASE(prp_list_chained),
	KUNIT_CASE(prp_list_full_page),
	KUNIT_CASE(prp_mdts_bound),
	KUNIT_CASE(prp_mps_64k),
	KUNIT_CASE(prp_host_errors),
	KUNIT_CASE(sgl_one_block),
	KUNIT_CASE(sgl_segments),
	KUNIT_CASE(sgl_bad_segments),
	KUNIT_CASE(sgl_loop),
	KUNIT_CASE(ring_next_count),
	KUNIT_CASE(cq_full),
	KUNIT_CASE(cq_head_valid),
	KUNIT_CASE(sq_tail_valid),
	KUNIT_CASE(sq_eventidx),
	{}
};

static struct kunit_suite nvmet_pci_common_suite = {
	.name = "nvmet-pci-common",
	.test_cases = nvmet_pci_common_cases,
};

kunit_test_suite(nvmet_pci_common_suite);

MODULE_DESCRIPTION("KUnit tests for the NVMe target's PCI transport helpers");
MODULE_LICENSE("GPL");
