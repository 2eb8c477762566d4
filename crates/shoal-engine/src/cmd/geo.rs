//! Geospatial indexes: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH, GEOSEARCHSTORE,
//! GEORADIUS, GEORADIUSBYMEMBER and their `_RO` forms.
//!
//! As in Redis, a geospatial index is a sorted set whose scores are 52-bit geohashes
//! (longitude and latitude, 26 bits each, interleaved), so every sorted-set command works on
//! it too. The arithmetic is Redis's (`geohash.c`, `geohash_helper.c`, `geo.c`), operation
//! for operation, so the scores, the decoded positions, the distances and the members a
//! search finds (and, without ASC or DESC, their order: the nine boxes around the centre,
//! each in score order) are redis-server's. The pure part is [`hash`]; the commands follow.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{key_slot, Collection, ZSet};

use super::zset::with_zset;
use super::{db, err, is, parse_double, parse_i64, tri, Ctx, ERR_SYNTAX};

/// The geohash arithmetic, as pure functions.
pub(crate) mod hash {
    pub const LONG_MIN: f64 = -180.0;
    pub const LONG_MAX: f64 = 180.0;
    pub const LAT_MIN: f64 = -85.05112878;
    pub const LAT_MAX: f64 = 85.05112878;
    /// Bits per coordinate of a stored score.
    pub const STEP_MAX: u8 = 26;
    const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
    const MERCATOR_MAX: f64 = 20037726.37;
    const D_R: f64 = std::f64::consts::PI / 180.0;

    fn deg_rad(ang: f64) -> f64 {
        ang * D_R
    }

    fn rad_deg(ang: f64) -> f64 {
        ang / D_R
    }

    /// `bits` holds `step` bits of each coordinate, latitude in the even positions.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Hash {
        pub bits: u64,
        pub step: u8,
    }

    impl Hash {
        /// A neighbour box left out of a search.
        const ZERO: Hash = Hash { bits: 0, step: 0 };

        fn is_zero(self) -> bool {
            self == Hash::ZERO
        }

        /// The scores of the box's points, `[min, max)` (Redis's `scoresOfGeoHashBox`).
        pub fn scores(self) -> (u64, u64) {
            let shift = 52 - u32::from(self.step) * 2;
            (self.bits << shift, (self.bits + 1) << shift)
        }
    }

    #[derive(Clone, Copy, Debug)]
    pub struct Range {
        pub min: f64,
        pub max: f64,
    }

    /// The ranges stored scores encode (Web Mercator's latitude limits).
    pub const LONG_RANGE: Range = Range {
        min: LONG_MIN,
        max: LONG_MAX,
    };
    pub const LAT_RANGE: Range = Range {
        min: LAT_MIN,
        max: LAT_MAX,
    };

    #[derive(Clone, Copy, Debug)]
    pub struct Area {
        pub lon: Range,
        pub lat: Range,
    }

    /// The low 32 bits of `v` spread to the even bit positions.
    fn spread(v: u32) -> u64 {
        let mut x = u64::from(v);
        x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
        x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
        x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        x = (x | (x << 2)) & 0x3333_3333_3333_3333;
        x = (x | (x << 1)) & 0x5555_5555_5555_5555;
        x
    }

    /// The even bits of `v`, gathered (the inverse of [`spread`]).
    fn gather(v: u64) -> u32 {
        let mut x = v & 0x5555_5555_5555_5555;
        x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
        x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
        x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
        x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
        x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
        x as u32
    }

    /// Redis's `geohashEncode`: `None` outside the supported coordinates or the ranges.
    pub fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<Hash> {
        if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
            return None;
        }
        if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
            return None;
        }
        let mut lat_offset = (lat - lat_r.min) / (lat_r.max - lat_r.min);
        let mut lon_offset = (lon - lon_r.min) / (lon_r.max - lon_r.min);
        lat_offset *= (1u64 << step) as f64;
        lon_offset *= (1u64 << step) as f64;
        Some(Hash {
            bits: spread(lat_offset as u32) | (spread(lon_offset as u32) << 1),
            step,
        })
    }

    /// The score a position is stored under (`None` outside the supported coordinates).
    pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
        encode(LONG_RANGE, LAT_RANGE, lon, lat, STEP_MAX).map(|h| h.scores().0)
    }

    /// Redis's `geohashDecode`: the box a hash names.
    pub fn decode(lon_r: Range, lat_r: Range, h: Hash) -> Area {
        let lat_scale = lat_r.max - lat_r.min;
        let lon_scale = lon_r.max - lon_r.min;
        let ilat = gather(h.bits);
        let ilon = gather(h.bits >> 1);
        let div = (1u64 << h.step) as f64;
        Area {
            lat: Range {
                min: lat_r.min + (f64::from(ilat) / div) * lat_scale,
                max: lat_r.min + (f64::from(ilat.wrapping_add(1)) / div) * lat_scale,
            },
            lon: Range {
                min: lon_r.min + (f64::from(ilon) / div) * lon_scale,
                max: lon_r.min + (f64::from(ilon.wrapping_add(1)) / div) * lon_scale,
            },
        }
    }

    /// A stored score's position, `(longitude, latitude)`: its box's centre, clamped.
    pub fn position(score: f64) -> (f64, f64) {
        let h = Hash {
            bits: score as u64,
            step: STEP_MAX,
        };
        let area = decode(LONG_RANGE, LAT_RANGE, h);
        let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
        let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
        (lon, lat)
    }

    /// The standard 11-character geohash of a stored score (GEOHASH), re-encoded over
    /// latitudes -90..90 as Redis does.
    pub fn geohash_string(score: f64) -> [u8; 11] {
        const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
        let (lon, lat) = position(score);
        let world = Range {
            min: -90.0,
            max: 90.0,
        };
        let bits = encode(LONG_RANGE, world, lon, lat, STEP_MAX).map_or(0, |h| h.bits);
        let mut out = [b'0'; 11];
        for (i, c) in out.iter_mut().enumerate().take(10) {
            *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
        }
        out
    }

    fn lat_distance(lat1: f64, lat2: f64) -> f64 {
        EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
    }

    /// Redis's `geohashGetDistance`: the haversine distance in meters.
    pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
        let lon1r = deg_rad(lon1);
        let lon2r = deg_rad(lon2);
        let v = ((lon2r - lon1r) / 2.0).sin();
        if v == 0.0 {
            return lat_distance(lat1, lat2);
        }
        let lat1r = deg_rad(lat1);
        let lat2r = deg_rad(lat2);
        let u = ((lat2r - lat1r) / 2.0).sin();
        let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
        2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
    }

    /// What a search covers, in meters once multiplied by `conversion`.
    #[derive(Clone, Copy, Debug)]
    pub enum Extent {
        Radius(f64),
        Box { width: f64, height: f64 },
    }

    #[derive(Clone, Copy, Debug)]
    pub struct Shape {
        pub lon: f64,
        pub lat: f64,
        /// Meters per unit of the extent.
        pub conversion: f64,
        pub extent: Extent,
    }

    impl Shape {
        /// The distance from the centre to a point, in meters, if the point is inside.
        pub fn distance_if_within(&self, lon: f64, lat: f64) -> Option<f64> {
            match self.extent {
                Extent::Radius(r) => {
                    let d = distance(self.lon, self.lat, lon, lat);
                    (d <= r * self.conversion).then_some(d)
                }
                Extent::Box { width, height } => {
                    if lat_distance(lat, self.lat) > height * self.conversion / 2.0 {
                        return None;
                    }
                    if distance(lon, lat, self.lon, lat) > width * self.conversion / 2.0 {
                        return None;
                    }
                    Some(distance(self.lon, self.lat, lon, lat))
                }
            }
        }

        /// `[min_lon, min_lat, max_lon, max_lat]` (Redis's `geohashBoundingBox`).
        fn bounds(&self) -> [f64; 4] {
            let (half_height, half_width) = match self.extent {
                Extent::Radius(r) => (r, r),
                Extent::Box { width, height } => (height / 2.0, width / 2.0),
            };
            let height = self.conversion * half_height;
            let width = self.conversion * half_width;
            let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
            let long_delta_top =
                rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat + lat_delta).cos());
            let long_delta_bottom =
                rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat - lat_delta).cos());
            let delta = if self.lat < 0.0 {
                long_delta_bottom
            } else {
                long_delta_top
            };
            [
                self.lon - delta,
                self.lat - lat_delta,
                self.lon + delta,
                self.lat + lat_delta,
            ]
        }

        /// The boxes to look in, in Redis's order: the centre's, then north, south, east,
        /// west, north-east, north-west, south-east, south-west; those that cannot hold a
        /// point of the shape are zero (Redis's `geohashCalculateAreasByShapeWGS84`).
        pub fn boxes(&self) -> [Hash; 9] {
            let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
            let radius_meters = match self.extent {
                Extent::Radius(r) => r,
                Extent::Box { width, height } => {
                    ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
                }
            } * self.conversion;
            let mut steps = estimate_steps(radius_meters, self.lat);
            let around = |steps: u8| {
                let h = encode(LONG_RANGE, LAT_RANGE, self.lon, self.lat, steps).unwrap_or(Hash {
                    bits: 0,
                    step: steps,
                });
                (h, neighbors(h), decode(LONG_RANGE, LAT_RANGE, h))
            };
            let (mut h, mut n, mut area) = around(steps);
            // A step too coarse near the edge of the covered area: one less.
            let decrease = {
                let box_of = |h| decode(LONG_RANGE, LAT_RANGE, h);
                box_of(n.north).lat.max < max_lat
                    || box_of(n.south).lat.min > min_lat
                    || box_of(n.east).lon.max < max_lon
                    || box_of(n.west).lon.min > min_lon
            };
            if steps > 1 && decrease {
                steps -= 1;
                (h, n, area) = around(steps);
            }
            if steps >= 2 {
                if area.lat.min < min_lat {
                    n.south = Hash::ZERO;
                    n.south_west = Hash::ZERO;
                    n.south_east = Hash::ZERO;
                }
                if area.lat.max > max_lat {
                    n.north = Hash::ZERO;
                    n.north_east = Hash::ZERO;
                    n.north_west = Hash::ZERO;
                }
                if area.lon.min < min_lon {
                    n.west = Hash::ZERO;
                    n.south_west = Hash::ZERO;
                    n.north_west = Hash::ZERO;
                }
                if area.lon.max > max_lon {
                    n.east = Hash::ZERO;
                    n.south_east = Hash::ZERO;
                    n.north_east = Hash::ZERO;
                }
            }
            [
                h,
                n.north,
                n.south,
                n.east,
                n.west,
                n.north_east,
                n.north_west,
                n.south_east,
                n.south_west,
            ]
        }
    }

    /// The boxes of `boxes` to scan, in order: zero ones left out, and one equal to the box
    /// scanned just before it (Redis compares with the last one scanned, never the centre).
    pub fn to_scan(boxes: &[Hash; 9]) -> Vec<Hash> {
        let mut out = Vec::with_capacity(9);
        let mut last = 0;
        for (i, b) in boxes.iter().enumerate() {
            if b.is_zero() || (last != 0 && *b == boxes[last]) {
                continue;
            }
            out.push(*b);
            last = i;
        }
        out
    }

    /// Redis's `geohashEstimateStepsByRadius`.
    fn estimate_steps(range_meters: f64, lat: f64) -> u8 {
        if range_meters == 0.0 {
            return 26;
        }
        let mut range = range_meters;
        let mut step: i32 = 1;
        while range < MERCATOR_MAX {
            range *= 2.0;
            step += 1;
        }
        step -= 2;
        if !(-66.0..=66.0).contains(&lat) {
            step -= 1;
            if !(-80.0..=80.0).contains(&lat) {
                step -= 1;
            }
        }
        step.clamp(1, 26) as u8
    }

    struct Neighbors {
        north: Hash,
        south: Hash,
        east: Hash,
        west: Hash,
        north_east: Hash,
        north_west: Hash,
        south_east: Hash,
        south_west: Hash,
    }

    const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
    const EVEN: u64 = 0x5555_5555_5555_5555;

    /// Moves a box by `d` (-1 or 1), wrapping, along the coordinate whose bits `axis`
    /// selects: the longitude's (odd bits, Redis's `geohash_move_x`) or the latitude's
    /// (even bits, `geohash_move_y`).
    fn shift(h: Hash, d: i8, axis: u64) -> Hash {
        let width = 64 - u32::from(h.step) * 2;
        let mine = h.bits & axis;
        let other = h.bits & !axis;
        // Ones in the other coordinate's places, so a carry or borrow runs through them.
        let zz = !axis >> width;
        let moved = if d > 0 {
            mine.wrapping_add(zz + 1)
        } else {
            (mine | zz).wrapping_sub(zz + 1)
        };
        Hash {
            bits: (moved & (axis >> width)) | other,
            step: h.step,
        }
    }

    fn move_x(h: Hash, d: i8) -> Hash {
        shift(h, d, ODD)
    }

    fn move_y(h: Hash, d: i8) -> Hash {
        shift(h, d, EVEN)
    }

    fn neighbors(h: Hash) -> Neighbors {
        Neighbors {
            east: move_x(h, 1),
            west: move_x(h, -1),
            south: move_y(h, -1),
            north: move_y(h, 1),
            north_west: move_y(move_x(h, -1), 1),
            south_west: move_y(move_x(h, -1), -1),
            north_east: move_y(move_x(h, 1), 1),
            south_east: move_y(move_x(h, 1), -1),
        }
    }
}

use hash::{Extent, Shape};

/// Meters per unit: M, KM, FT, MI (any case).
fn unit(arg: &[u8]) -> Result<f64, Reply> {
    let u = arg.to_ascii_lowercase();
    match &u[..] {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(err(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

/// A double argument, or `ERR <what>` (Redis's `getDoubleFromObjectOrReply`).
fn double(arg: &[u8], what: &'static str) -> Result<f64, Reply> {
    parse_double(arg).ok_or_else(|| err(what))
}

const ERR_FLOAT: &str = "ERR value is not a valid float";
/// A member a search starts from (FROMMEMBER, BYMEMBER) that the set does not hold.
const ERR_NO_MEMBER: &str = "ERR could not decode requested zset member";

/// A longitude and latitude argument pair, in range.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Reply> {
    let lon = double(lon, ERR_FLOAT)?;
    let lat = double(lat, ERR_FLOAT)?;
    if !(hash::LONG_MIN..=hash::LONG_MAX).contains(&lon)
        || !(hash::LAT_MIN..=hash::LAT_MAX).contains(&lat)
    {
        return Err(Reply::error(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// A radius and its unit: `(radius, meters per unit)`.
fn radius(arg: &[u8], unit_arg: &[u8]) -> Result<(f64, f64), Reply> {
    let r = double(arg, "ERR need numeric radius")?;
    if r < 0.0 {
        return Err(err("ERR radius cannot be negative"));
    }
    Ok((r, unit(unit_arg)?))
}

/// A coordinate as Redis's "human" long double: 17 decimals, trailing zeros cut (a RESP3
/// double, a bulk string in RESP2).
fn human(d: f64) -> Reply {
    let mut s = format!("{d:.17}");
    if s.contains('.') {
        let keep = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(keep);
    }
    if s == "-0" {
        s = "0".to_string();
    }
    Reply::DoubleText(Bytes::from(s))
}

/// A distance as Redis writes it: four decimals, rounded half to even, a bulk string.
fn distance_reply(d: f64) -> Reply {
    let scaled = (d * 10000.0).round_ties_even();
    let v = scaled.abs() as u64;
    let sign = if scaled < 0.0 { "-" } else { "" };
    Reply::Bulk(Bytes::from(format!("{sign}{}.{:04}", v / 10000, v % 10000)))
}

fn position_reply(score: f64) -> Reply {
    let (lon, lat) = hash::position(score);
    Reply::Array(vec![human(lon), human(lat)])
}

/// GEOADD key [NX | XX] [CH] longitude latitude member [...]: as in Redis, the positions
/// are turned into scores and the command runs as ZADD (with the same key and options).
pub fn geoadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut i = 2;
    let (mut nx, mut xx) = (false, false);
    while i < args.len() {
        if is(&args[i], "NX") {
            nx = true;
        } else if is(&args[i], "XX") {
            xx = true;
        } else if !is(&args[i], "CH") {
            break;
        }
        i += 1;
    }
    let triples = &args[i..];
    if !triples.len().is_multiple_of(3) || (nx && xx) {
        return err(ERR_SYNTAX);
    }
    let mut zadd: Vec<Bytes> = Vec::with_capacity(i + triples.len() / 3 * 2);
    zadd.push(Bytes::from_static(b"ZADD"));
    zadd.extend(args[1..i].iter().cloned());
    for t in triples.chunks_exact(3) {
        let (lon, lat) = tri!(lon_lat(&t[0], &t[1]));
        let Some(score) = hash::score_of(lon, lat) else {
            return Reply::error(format!(
                "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
            ));
        };
        zadd.push(Bytes::from(score.to_string()));
        zadd.push(t[2].clone());
    }
    super::zset::zadd(ctx, &zadd)
}

/// GEODIST key member1 member2 [M | KM | FT | MI].
pub fn geodist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => tri!(unit(&args[4])),
        _ => return err(ERR_SYNTAX),
    };
    with_zset(ctx, &args[1], |z, _, _| {
        let scores = z.and_then(|z| Some((z.score(&args[2])?, z.score(&args[3])?)));
        let Some((a, b)) = scores else {
            return Reply::Nil;
        };
        let (lon1, lat1) = hash::position(a);
        let (lon2, lat2) = hash::position(b);
        distance_reply(hash::distance(lon1, lat1, lon2, lat2) / to_meters)
    })
}

/// GEOHASH key [member ...].
pub fn geohash(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_zset(ctx, &args[1], |z, _, _| {
        Reply::Array(
            args[2..]
                .iter()
                .map(|m| match z.and_then(|z| z.score(m)) {
                    Some(s) => Reply::Bulk(Bytes::copy_from_slice(&hash::geohash_string(s))),
                    None => Reply::Nil,
                })
                .collect(),
        )
    })
}

/// GEOPOS key [member ...].
pub fn geopos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_zset(ctx, &args[1], |z, _, _| {
        Reply::Array(
            args[2..]
                .iter()
                .map(|m| {
                    z.and_then(|z| z.score(m))
                        .map_or(Reply::NilArray, position_reply)
                })
                .collect(),
        )
    })
}

/// Which command of the search family runs (Redis's `georadiusGeneric` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS / GEORADIUS_RO: centre and radius at fixed places.
    Radius { store: bool },
    /// GEORADIUSBYMEMBER / GEORADIUSBYMEMBER_RO.
    ByMember { store: bool },
    /// GEOSEARCH / GEOSEARCHSTORE: everything by keyword.
    Search { store: bool },
}

/// Where a search's centre comes from before the key is read.
enum Centre<'a> {
    At(f64, f64),
    Member(&'a Bytes),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A search request, parsed.
struct Search<'a> {
    src: &'a Bytes,
    centre: Option<Centre<'a>>,
    extent: Option<(Extent, f64)>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    any: bool,
    count: usize,
    sort: Sort,
    store: Option<&'a Bytes>,
    store_dist: bool,
}

/// Parses a search as Redis does, in argument order, so the first error met is Redis's.
/// A FROMMEMBER member the key (when it exists) does not hold is an error where it is met,
/// as Redis looks it up there (`member_missing`); where it is is read later, under the
/// key's lock, as is BYMEMBER's.
fn parse_search<'a>(
    args: &'a [Bytes],
    form: Form,
    member_missing: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Search<'a>, Reply> {
    let mut s = Search {
        src: &args[1],
        centre: None,
        extent: None,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        any: false,
        count: 0,
        sort: Sort::None,
        store: None,
        store_dist: false,
    };
    let base = match form {
        Form::Radius { .. } => {
            let (lon, lat) = lon_lat(&args[2], &args[3])?;
            s.centre = Some(Centre::At(lon, lat));
            let (r, conversion) = radius(&args[4], &args[5])?;
            s.extent = Some((Extent::Radius(r), conversion));
            6
        }
        Form::ByMember { .. } => {
            s.centre = Some(Centre::Member(&args[2]));
            // Read only if the key exists (then after the member), as Redis does.
            5
        }
        Form::Search { store: true } => {
            s.src = &args[2];
            s.store = Some(&args[1]);
            3
        }
        Form::Search { store: false } => 2,
    };
    let search = matches!(form, Form::Search { .. });
    let store_allowed = matches!(
        form,
        Form::Radius { store: true } | Form::ByMember { store: true }
    );
    let (mut from_member, mut from_loc, mut by_radius, mut by_box) = (false, false, false, false);
    let rest = &args[base..];
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        let left = rest.len() - i - 1;
        if is(a, "WITHDIST") {
            s.with_dist = true;
        } else if is(a, "WITHHASH") {
            s.with_hash = true;
        } else if is(a, "WITHCOORD") {
            s.with_coord = true;
        } else if is(a, "ANY") {
            s.any = true;
        } else if is(a, "ASC") {
            s.sort = Sort::Asc;
        } else if is(a, "DESC") {
            s.sort = Sort::Desc;
        } else if is(a, "COUNT") && left >= 1 {
            let n = parse_i64(&rest[i + 1])
                .ok_or_else(|| err("ERR value is not an integer or out of range"))?;
            if n <= 0 {
                return Err(err("ERR COUNT must be > 0"));
            }
            s.count = usize::try_from(n).unwrap_or(usize::MAX);
            i += 1;
        } else if (is(a, "STORE") || is(a, "STOREDIST")) && left >= 1 && store_allowed {
            s.store = Some(&rest[i + 1]);
            s.store_dist = is(a, "STOREDIST");
            i += 1;
        } else if is(a, "STOREDIST") && form == (Form::Search { store: true }) {
            s.store_dist = true;
        } else if is(a, "FROMMEMBER") && left >= 1 && search && !from_loc {
            if member_missing(&rest[i + 1]) {
                return Err(err(ERR_NO_MEMBER));
            }
            s.centre = Some(Centre::Member(&rest[i + 1]));
            from_member = true;
            i += 1;
        } else if is(a, "FROMLONLAT") && left >= 2 && search && !from_member {
            let (lon, lat) = lon_lat(&rest[i + 1], &rest[i + 2])?;
            s.centre = Some(Centre::At(lon, lat));
            from_loc = true;
            i += 2;
        } else if is(a, "BYRADIUS") && left >= 2 && search && !by_box {
            let (r, conversion) = radius(&rest[i + 1], &rest[i + 2])?;
            s.extent = Some((Extent::Radius(r), conversion));
            by_radius = true;
            i += 2;
        } else if is(a, "BYBOX") && left >= 3 && search && !by_radius {
            let width = double(&rest[i + 1], "ERR need numeric width")?;
            let height = double(&rest[i + 2], "ERR need numeric height")?;
            if width < 0.0 || height < 0.0 {
                return Err(err("ERR height or width cannot be negative"));
            }
            let conversion = unit(&rest[i + 3])?;
            s.extent = Some((Extent::Box { width, height }, conversion));
            by_box = true;
            i += 3;
        } else {
            return Err(err(ERR_SYNTAX));
        }
        i += 1;
    }
    if s.store.is_some() && (s.with_dist || s.with_hash || s.with_coord) {
        let what = if search {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(Reply::error(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = String::from_utf8_lossy(&args[0]).into_owned();
    if search && !(from_member || from_loc) {
        return Err(Reply::error(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if search && !(by_radius || by_box) {
        return Err(Reply::error(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if s.any && s.count == 0 {
        return Err(err("ERR the ANY argument requires COUNT argument"));
    }
    Ok(s)
}

/// One point found.
struct Found {
    member: Vec<u8>,
    score: f64,
    lon: f64,
    lat: f64,
    dist: f64,
}

/// The points of `z` inside `shape`, box by box as Redis visits them; at most `limit`
/// (0: all).
fn points_within(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Found> {
    let mut found = Vec::new();
    for b in hash::to_scan(&shape.boxes()) {
        if limit > 0 && found.len() >= limit {
            break;
        }
        let (min, max) = b.scores();
        let (min, max) = (min as f64, max as f64);
        for (member, score) in z.from_score(min) {
            if score >= max {
                break;
            }
            if score < min {
                continue;
            }
            let (lon, lat) = hash::position(score);
            if let Some(dist) = shape.distance_if_within(lon, lat) {
                found.push(Found {
                    member: member.to_vec(),
                    score,
                    lon,
                    lat,
                    dist,
                });
                if limit > 0 && found.len() >= limit {
                    break;
                }
            }
        }
    }
    found
}

/// GEORADIUS, GEORADIUSBYMEMBER, GEOSEARCH, GEOSEARCHSTORE and the `_RO` forms.
fn search_generic(ctx: &mut Ctx<'_>, args: &[Bytes], form: Form) -> Reply {
    // Redis looks at the source's type before anything else.
    let src = if form == (Form::Search { store: true }) {
        &args[2]
    } else {
        &args[1]
    };
    if super::kind_of(ctx, src).is_some_and(|k| k != shoal_store::Kind::ZSet) {
        // Read as Redis reads it (a hit), which answers WRONGTYPE.
        return with_zset(ctx, src, |_, _, _| Reply::Nil);
    }
    // A peek: the search's own read below counts the key's hit or miss, once, as Redis.
    let (store, now) = (&ctx.engine.store, ctx.now_ms);
    let mut member_missing = |m: &[u8]| {
        store.read(src, now, shoal_store::Access::Peek, |e| {
            e.and_then(|e| e.coll)
                .and_then(<ZSet as super::Typed>::of)
                .is_some_and(|z| z.score(m).is_none())
        })
    };
    let s = match parse_search(args, form, &mut member_missing) {
        Ok(s) => s,
        Err(e) => {
            // Redis reads the key (a hit or a miss) before it reads the options.
            with_zset(ctx, src, |_, _, _| Reply::Nil);
            return e;
        }
    };
    // On the cluster-client port a STORE key must be in the source's slot, as in Redis
    // Cluster (GEOSEARCHSTORE's is a key of the row, checked with the others); elsewhere the
    // router sent it to the owner of both keys (`db::store_key`).
    if let (Some(dst), Form::Radius { .. } | Form::ByMember { .. }) = (s.store, form) {
        if ctx.session.redis_cluster && key_slot(dst) != key_slot(s.src) {
            return err("CROSSSLOT Keys in request don't hash to the same slot");
        }
    }
    let by_member = matches!(form, Form::ByMember { .. });
    let mut stored: Option<Vec<Found>> = None;
    let reply = with_zset(ctx, s.src, |z, budget, _| {
        let Some(z) = z else {
            if s.store.is_some() {
                stored = Some(Vec::new());
                return Reply::Nil;
            }
            return Reply::Array(Vec::new());
        };
        let (lon, lat) = match s.centre {
            Some(Centre::At(lon, lat)) => (lon, lat),
            Some(Centre::Member(m)) => match z.score(m) {
                Some(score) => hash::position(score),
                None => return err(ERR_NO_MEMBER),
            },
            None => return err(ERR_SYNTAX),
        };
        // GEORADIUSBYMEMBER reads its radius after the member, as Redis does.
        let (extent, conversion) = match (by_member, s.extent) {
            (true, _) => match radius(&args[3], &args[4]) {
                Ok((r, c)) => (Extent::Radius(r), c),
                Err(e) => return e,
            },
            (false, Some(e)) => e,
            (false, None) => return err(ERR_SYNTAX),
        };
        let shape = Shape {
            lon,
            lat,
            conversion,
            extent,
        };
        let mut found = points_within(z, &shape, if s.any { s.count } else { 0 });
        let mut sort = s.sort;
        if s.count > 0 && sort == Sort::None && !s.any {
            sort = Sort::Asc;
        }
        match sort {
            Sort::Asc => found.sort_by(|a, b| a.dist.total_cmp(&b.dist)),
            Sort::Desc => found.sort_by(|a, b| b.dist.total_cmp(&a.dist)),
            Sort::None => {}
        }
        if s.count > 0 {
            found.truncate(s.count);
        }
        for f in &mut found {
            f.dist /= conversion;
        }
        if s.store.is_some() {
            stored = Some(found);
            return Reply::Nil;
        }
        let options =
            usize::from(s.with_dist) + usize::from(s.with_hash) + usize::from(s.with_coord);
        let mut out = Vec::with_capacity(found.len());
        for f in found {
            if !budget.charge(f.member.len() + 16 * options) {
                return Reply::Nil;
            }
            let member = Reply::Bulk(Bytes::from(f.member));
            if options == 0 {
                out.push(member);
                continue;
            }
            let mut item = vec![member];
            if s.with_dist {
                item.push(distance_reply(f.dist));
            }
            if s.with_hash {
                item.push(Reply::Int(f.score as i64));
            }
            if s.with_coord {
                item.push(Reply::Array(vec![human(f.lon), human(f.lat)]));
            }
            out.push(Reply::Array(item));
        }
        Reply::Array(out)
    });
    let (Some(dst), Some(found)) = (s.store, stored) else {
        return reply;
    };
    // GEOSEARCHSTORE's destination is a key of its row (already in this database's form);
    // GEORADIUS's STORE key is not.
    let dst = match form {
        Form::Search { .. } => dst.clone(),
        _ => db::stored_key(ctx.session.db, dst),
    };
    let longest = found.iter().map(|f| f.member.len()).max().unwrap_or(0);
    let mut z = ZSet::for_members(found.len(), longest);
    for f in &found {
        z.insert(&f.member, if s.store_dist { f.dist } else { f.score });
    }
    let n = z.len() as i64;
    let existed = ctx.engine.store.write(&dst, ctx.now_ms, |slot| {
        if n == 0 {
            return slot.remove();
        }
        slot.set_coll(Collection::ZSet(z));
        slot.set_expire(None);
        false
    });
    let event = match form {
        Form::Search { .. } => "geosearchstore",
        _ => "georadiusstore",
    };
    super::notify_stored(ctx, crate::notify::ZSET, event, &dst, n > 0, existed);
    Reply::Int(n)
}

/// The STORE or STOREDIST key of a GEORADIUS or GEORADIUSBYMEMBER request (the last one
/// given), found as Redis's `georadiusGetKeys` finds it.
pub fn store_key(args: &[Bytes]) -> Option<&Bytes> {
    let mut found = None;
    let mut i = 5;
    while i < args.len() {
        if (is(&args[i], "STORE") || is(&args[i], "STOREDIST")) && i + 1 < args.len() {
            found = Some(&args[i + 1]);
            i += 1;
        }
        i += 1;
    }
    found
}

/// GEORADIUS key longitude latitude radius unit [options] [STORE key | STOREDIST key].
pub fn georadius(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    search_generic(ctx, args, Form::Radius { store: true })
}

pub fn georadius_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    search_generic(ctx, args, Form::Radius { store: false })
}

/// GEORADIUSBYMEMBER key member radius unit [options] [STORE key | STOREDIST key].
pub fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    search_generic(ctx, args, Form::ByMember { store: true })
}

pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    search_generic(ctx, args, Form::ByMember { store: false })
}

/// GEOSEARCH key FROMMEMBER m | FROMLONLAT lon lat BYRADIUS r unit | BYBOX w h unit
/// [ASC | DESC] [COUNT n [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH].
pub fn geosearch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    search_generic(ctx, args, Form::Search { store: false })
}

/// GEOSEARCHSTORE dst src ... [STOREDIST].
pub fn geosearchstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    search_generic(ctx, args, Form::Search { store: true })
}

#[cfg(test)]
mod tests {
    use super::hash::*;
    use super::*;

    // Figures from Redis's documentation (GEOADD Sicily Palermo / Catania), as redis-server
    // answers them.
    const PALERMO: (f64, f64) = (13.361389, 38.115556);
    const CATANIA: (f64, f64) = (15.087269, 37.502669);

    fn text(r: Reply) -> String {
        match r {
            Reply::DoubleText(b) | Reply::Bulk(b) => String::from_utf8(b.to_vec()).unwrap(),
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn scores_positions_and_hashes_are_redis_s() {
        let p = score_of(PALERMO.0, PALERMO.1).unwrap();
        let c = score_of(CATANIA.0, CATANIA.1).unwrap();
        assert_eq!(p, 3479099956230698);
        assert_eq!(c, 3479447370796909);
        let (lon, lat) = position(p as f64);
        assert_eq!(text(human(lon)), "13.36138933897018433");
        assert_eq!(text(human(lat)), "38.11555639549629859");
        assert_eq!(&geohash_string(p as f64), b"sqc8b49rny0");
        assert_eq!(&geohash_string(c as f64), b"sqdtr74hyu0");
    }

    #[test]
    fn distances_are_redis_s() {
        let (a, b) = (position(3479099956230698.0), position(3479447370796909.0));
        let d = distance(a.0, a.1, b.0, b.1);
        assert_eq!(text(distance_reply(d)), "166274.1516");
        assert_eq!(text(distance_reply(d / 1000.0)), "166.2742");
        assert_eq!(text(distance_reply(d / 1609.34)), "103.3182");
        assert_eq!(text(distance_reply(0.0)), "0.0000");
    }

    #[test]
    fn out_of_range_positions_have_no_score() {
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
        assert!(score_of(-180.0, -85.05112878).is_some());
    }

    #[test]
    fn a_radius_search_finds_what_is_inside_it() {
        let shape = Shape {
            lon: 15.0,
            lat: 37.0,
            conversion: 1000.0,
            extent: Extent::Radius(200.0),
        };
        let inside = |s: u64| {
            let (lon, lat) = position(s as f64);
            shape.distance_if_within(lon, lat)
        };
        let p = inside(3479099956230698).map(|d| text(distance_reply(d / 1000.0)));
        let c = inside(3479447370796909).map(|d| text(distance_reply(d / 1000.0)));
        assert_eq!(p.as_deref(), Some("190.4424"));
        assert_eq!(c.as_deref(), Some("56.4413"));
        // Both points' scores fall in one of the boxes scanned.
        let boxes = to_scan(&shape.boxes());
        for s in [3479099956230698u64, 3479447370796909] {
            assert!(boxes.iter().any(|b| {
                let (min, max) = b.scores();
                (min..max).contains(&s)
            }));
        }
    }

    #[test]
    fn options_are_checked_as_redis_checks_them() {
        let a =
            |s: &str| -> Vec<Bytes> { s.split(' ').map(|w| Bytes::from(w.to_string())).collect() };
        let e = |s: &str, form| match parse_search(&a(s), form, &mut |_| false) {
            Err(Reply::Error(e)) => e.to_string(),
            Err(other) => panic!("{other:?}"),
            Ok(_) => "ok".to_string(),
        };
        let search = Form::Search { store: false };
        assert_eq!(
            e("GEOSEARCH k BYRADIUS 1 km", search),
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH"
        );
        assert_eq!(
            e("GEOSEARCH k FROMLONLAT 1 1", search),
            "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"
        );
        assert_eq!(
            e("GEOSEARCH k FROMLONLAT 1 1 BYRADIUS 1 km ANY", search),
            "ERR the ANY argument requires COUNT argument"
        );
        assert_eq!(
            e("GEOSEARCH k FROMLONLAT 1 1 BYRADIUS 1 yd", search),
            "ERR unsupported unit provided. please use M, KM, FT, MI"
        );
        assert_eq!(
            e("GEOSEARCH k FROMLONLAT 1 1 BYRADIUS -1 km", search),
            "ERR radius cannot be negative"
        );
        assert_eq!(
            e("GEOSEARCH k FROMLONLAT 200 1 BYRADIUS 1 km", search),
            "ERR invalid longitude,latitude pair 200.000000,1.000000"
        );
        assert_eq!(
            e("GEOSEARCH k FROMLONLAT 1 1 BYRADIUS 1 km STORE x", search),
            "ERR syntax error"
        );
        assert_eq!(
            e("GEORADIUS k 1 1 1 km WITHDIST STORE x", Form::Radius { store: true }),
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        );
        assert_eq!(
            e(
                "GEORADIUS_RO k 1 1 1 km STORE x",
                Form::Radius { store: false }
            ),
            "ERR syntax error"
        );
        assert_eq!(
            e("GEORADIUS k 1 1 1 km COUNT 0", Form::Radius { store: true }),
            "ERR COUNT must be > 0"
        );
        assert_eq!(
            e(
                "GEOSEARCH k FROMLONLAT 1 1 BYBOX 1 1 km COUNT 3 ANY DESC",
                search
            ),
            "ok"
        );
    }
}
