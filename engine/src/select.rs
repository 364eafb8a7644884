//! Which devices a run uses: the one typed `--device` value every binary parses once
//! ([`DeviceSelector`], a [`std::str::FromStr`] so clap's value parser takes it as it is) and
//! the devices it names; the rule that turns it into physical devices is
//! [`crate::context::Instance::select`].

use std::fmt;
use std::str::FromStr;

use crate::error::{EngineError, Result};

/// One device named on the command line: its index in the driver's list of Vulkan 1.3
/// devices, or a case-insensitive substring of its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceRef {
    Index(usize),
    Name(String),
}

/// `--device`: `auto` (the default device), one device, a comma list, or `all`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The first discrete GPU, else integrated, else virtual, else CPU (lavapipe).
    #[default]
    Auto,
    /// The devices named, in order.
    Devices(Vec<DeviceRef>),
    /// Every device; every GPU where there are GPUs (a CPU driver beside them is no GPU).
    All,
}

impl DeviceSelector {
    /// A selector naming one device by index.
    pub fn index(i: usize) -> Self {
        DeviceSelector::Devices(vec![DeviceRef::Index(i)])
    }

    /// The selector `TESSERA_DEVICE` names (tests and benches), else the default.
    pub fn from_env() -> Result<Self> {
        match std::env::var("TESSERA_DEVICE") {
            Ok(s) if !s.trim().is_empty() => s.parse(),
            _ => Ok(DeviceSelector::Auto),
        }
    }

    /// Whether this selector may name more than one device.
    pub fn is_several(&self) -> bool {
        match self {
            DeviceSelector::Auto => false,
            DeviceSelector::Devices(list) => list.len() > 1,
            DeviceSelector::All => true,
        }
    }
}

impl FromStr for DeviceSelector {
    type Err = EngineError;

    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.is_empty() {
            return Err(EngineError::BadSelector(
                "--device is empty; give an index, a name substring, a comma list or `all`".into(),
            ));
        }
        if text.eq_ignore_ascii_case("all") {
            return Ok(DeviceSelector::All);
        }
        if text.eq_ignore_ascii_case("auto") {
            return Ok(DeviceSelector::Auto);
        }
        let parts = text
            .split(',')
            .map(|part| {
                let part = part.trim();
                if part.is_empty() {
                    return Err(EngineError::BadSelector(format!("--device {text:?} has an empty entry")));
                }
                Ok(match part.parse::<usize>() {
                    Ok(i) => DeviceRef::Index(i),
                    Err(_) => DeviceRef::Name(part.to_string()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceSelector::Devices(parts))
    }
}

impl fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceRef::Index(i) => write!(f, "{i}"),
            DeviceRef::Name(n) => f.write_str(n),
        }
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelector::Auto => f.write_str("auto"),
            DeviceSelector::All => f.write_str("all"),
            DeviceSelector::Devices(list) => {
                let names: Vec<String> = list.iter().map(ToString::to_string).collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Instance;

    #[test]
    fn parses_every_form_once() {
        assert_eq!("all".parse::<DeviceSelector>().unwrap(), DeviceSelector::All);
        assert_eq!("ALL".parse::<DeviceSelector>().unwrap(), DeviceSelector::All);
        assert_eq!("auto".parse::<DeviceSelector>().unwrap(), DeviceSelector::Auto);
        assert_eq!(DeviceSelector::Auto.to_string().parse::<DeviceSelector>().unwrap(), DeviceSelector::Auto);
        assert_eq!("2".parse::<DeviceSelector>().unwrap(), DeviceSelector::index(2));
        assert_eq!(
            "0, nvidia".parse::<DeviceSelector>().unwrap(),
            DeviceSelector::Devices(vec![DeviceRef::Index(0), DeviceRef::Name("nvidia".into())])
        );
        assert!("".parse::<DeviceSelector>().is_err());
        assert!("0,,1".parse::<DeviceSelector>().is_err());
        assert_eq!("0,llvm".parse::<DeviceSelector>().unwrap().to_string(), "0,llvm");
        assert!("0,1".parse::<DeviceSelector>().unwrap().is_several());
        assert!(!"1".parse::<DeviceSelector>().unwrap().is_several());
    }

    #[test]
    fn resolves_against_the_devices_there_are() {
        let instance = Instance::new(&[]).unwrap();
        let n = instance.devices().unwrap().len();
        assert_eq!(instance.select(&DeviceSelector::Auto).unwrap().len(), 1);
        assert_eq!(instance.select_one(&DeviceSelector::index(0)).unwrap(), 0);
        let missing = instance.select(&DeviceSelector::index(n)).unwrap_err().to_string();
        assert!(missing.contains("no device matches"), "{missing}");
        let name = "no-such-device-name".parse::<DeviceSelector>().unwrap();
        assert!(instance.select(&name).is_err());
        assert!(instance.select_for_rank(&DeviceSelector::Auto, 7).unwrap() < n);
        let two = DeviceSelector::Devices(vec![DeviceRef::Index(0), DeviceRef::Index(0)]);
        assert!(instance.select_one(&two).is_err());
    }
}
