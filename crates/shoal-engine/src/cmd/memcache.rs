//! The Memcached protocol's requests inside a cluster: the internal rows `mc.read`,
//! `mc.write` and `mc.flush` (see `cmd::INTERNAL`) carry a Memcached request, its text then
//! the keys it names, through the cluster layer, which places, forwards, fails over and
//! replicates them by these rows as it does any command. The node that runs one executes
//! the text with `mc`, and the reply is the Memcached reply's bytes as a bulk string.

use bytes::Bytes;
use shoal_resp::Reply;

use super::Ctx;
use crate::mc;

/// True for a tunneled Memcached request that stores without reading: a text `set` (binary
/// requests arrive translated to text). `add`, `replace`, `cas`, `append`, `incr`, `delete`
/// and the meta commands depend on what is stored.
pub fn blind(args: &[Bytes]) -> bool {
    args.len() >= 2 && &args[0][..] == b"mc.write" && args[1].starts_with(b"set ")
}

pub fn tunneled(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    // Translated binary requests may carry base64 keys longer than a text key.
    let limits = shoal_memcache::binary::text_limits(&mc::limits(ctx.engine));
    let max_reply = ctx.session.budget.left();
    Reply::Bulk(mc::run_tunneled(
        ctx.engine, &args[1], &limits, ctx.now_ms, max_reply,
    ))
}
