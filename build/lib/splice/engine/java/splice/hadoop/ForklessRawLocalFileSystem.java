package splice.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's raw local file system without its child processes.
 *
 * <p>Without Hadoop's native library (PySpark ships none) the raw local file
 * system starts a {@code chmod} process for every file and directory it
 * creates, and a {@code readlink} process for both paths of every rename
 * (Delta's commits, a streaming checkpoint's logs). Java sets the same
 * permission bits, and tells whether a path is a symbolic link, in-process.
 * Everything else, a symbolic link's status included, is Hadoop's own.
 */
public class ForklessRawLocalFileSystem extends RawLocalFileSystem {
  // The permission bits from the lowest (others' execute) up.
  private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ};
  private static final int SPECIAL_BITS = 07000;  // sticky, setgid, setuid

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    short mode = permission.toShort();
    if ((mode & SPECIAL_BITS) != 0) {  // Java cannot set them: Hadoop's chmod does
      super.setPermission(p, permission);
      return;
    }
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (int bit = 0; bit < BITS.length; bit++) {
      if ((mode & (1 << bit)) != 0) {
        set.add(BITS[bit]);
      }
    }
    Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    if (Files.isSymbolicLink(pathToFile(f).toPath())) {
      return super.getFileLinkStatus(f);
    }
    return getFileStatus(f);  // what Hadoop returns for a path that is no link
  }
}
